// The compute probe's loops for the kernels on vpdpbusd (ops/avxvnni/matmul_avxvnni.cpp).
#include <immintrin.h>

#include <cstdint>

#include "ops/avx2/compute_peak_steps.h"
#include "ops/compute_peak_kernels.h"

namespace hearth::ops::detail::avxvnni {

// As PQ8<DotVnni>: per weight vector |w| once, then for each of 6 tokens sign(a, w) and one
// vpdpbusd.
double peak_s8s8(int64_t iters) {
  run_int_step(iters, _mm256_set1_epi8(-5), [&](__m256i w, const int8_t* a, __m256i* acc) {
    const __m256i aw = _mm256_sign_epi8(w, w);
#pragma GCC unroll 6
    for (int j = 0; j < 6; ++j)
      acc[j] = _mm256_dpbusd_avx_epi32(acc[j], aw, _mm256_sign_epi8(bcast(a + 4 * j), w));
  });
  return static_cast<double>(iters) * 6 * 32 * 2;
}

// As the nibble kernels on vpdpbusd (PQ4, PQ4K): per weight vector the low and high nibbles,
// then for each of 6 tokens two vpdpbusd.
double peak_u8s8(int64_t iters) {
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  run_int_step(iters, _mm256_set1_epi8(0x5A), [&](__m256i w, const int8_t* a, __m256i* acc) {
    const __m256i lo = _mm256_and_si256(w, m4);
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(w, 4), m4);
#pragma GCC unroll 6
    for (int j = 0; j < 6; ++j)
      acc[j] = _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(acc[j], lo, bcast(a + 4 * j)), hi,
                                       bcast(a + 32 + 4 * j));
  });
  return static_cast<double>(iters) * 6 * 64 * 2;
}

}  // namespace hearth::ops::detail::avxvnni
