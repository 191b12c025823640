// Shared helpers for the kernel tests: random inputs, ulp distances and SIMD-level selection.
#pragma once

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <random>
#include <vector>

#include "ops/cpu_features.h"

namespace hearth::test {

// n normally distributed floats (mean 0, deviation `scale`), the same for the same seed.
inline std::vector<float> random_vec(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Distance in units in the last place (ordered-integer difference; finite floats).
inline int64_t ulp_diff(float a, float b) {
  if (a == b) return 0;
  auto ordered = [](float f) {
    int32_t i;
    std::memcpy(&i, &f, 4);
    return i < 0 ? static_cast<int64_t>(INT32_MIN) - i : static_cast<int64_t>(i);
  };
  const int64_t d = ordered(a) - ordered(b);
  return d < 0 ? -d : d;
}

// Restores the SIMD level a test changed.
struct LevelGuard {
  ops::SimdLevel saved = ops::simd_level();
  ~LevelGuard() { ops::set_simd_level(saved); }
};

// Those of `wanted` that this CPU runs, in the order given.
inline std::vector<ops::SimdLevel> levels_available(std::initializer_list<ops::SimdLevel> wanted) {
  LevelGuard g;
  std::vector<ops::SimdLevel> out;
  for (ops::SimdLevel l : wanted) {
    ops::set_simd_level(l);
    if (ops::simd_level() == l) out.push_back(l);
  }
  return out;
}

}  // namespace hearth::test
