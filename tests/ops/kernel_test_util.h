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

// Restores the SIMD level (and the VNNI encoding) a test changed.
struct LevelGuard {
  ops::SimdLevel saved = ops::simd_level();
  bool saved_evex = ops::vnni_evex();
  ~LevelGuard() {
    ops::set_simd_level(saved);
    ops::set_vnni_evex(saved_evex);
  }
};

// The encodings of vpdpbusd this CPU runs (false: AVX-VNNI, true: AVX512-VNNI + VL), for the
// Avx2Vnni level's kernels.
inline std::vector<bool> vnni_encodings() {
  const ops::CpuFeatures& f = ops::cpu_features();
  const bool evex = f.avx512f && f.avx512bw && f.avx512vl && f.avx512vnni;
  if (f.avxvnni && evex) return {false, true};
  return {evex};
}

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
