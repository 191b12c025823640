// Shared helpers for comparing forward passes with the goldens in ../shared/golden.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/shared_data.h"

namespace hearth::test {

inline nlohmann::json load_json(const std::string& path) {
  return nlohmann::json::parse(read_file(path));
}

inline std::vector<int32_t> ids_of(const nlohmann::json& a) {
  std::vector<int32_t> v;
  for (const auto& x : a) v.push_back(x.get<int32_t>());
  return v;
}

// Largest |a[i] - b[i]|, with the index where it occurs.
inline std::pair<double, size_t> max_abs_diff(const std::vector<float>& a,
                                              const nlohmann::json& b) {
  double worst = 0.0;
  size_t at = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = std::fabs(static_cast<double>(a[i]) - b[i].get<double>());
    if (!(d <= worst)) {  // also catches NaN
      worst = std::isnan(d) ? INFINITY : d;
      at = i;
    }
  }
  return {worst, at};
}

}  // namespace hearth::test

// Skips the current test unless ../shared holds golden/<set>/<name>.json and
// models/<set>/<name>.gguf (`set` a string literal); binds the parsed golden to `golden` and the
// loaded model to `model`.
#define HEARTH_GOLDEN_AND_MODEL_OR_SKIP(golden, model, set, name)             \
  HEARTH_SHARED_OR_SKIP(golden##_path, "golden/" set "/" + (name) + ".json"); \
  HEARTH_SHARED_OR_SKIP(model##_path, "models/" set "/" + (name) + ".gguf");  \
  const nlohmann::json golden = ::hearth::test::load_json(golden##_path);     \
  auto model = ::hearth::Model::load(model##_path)
