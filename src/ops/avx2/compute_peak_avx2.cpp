// The compute probe's loops. An empty asm statement "changes" the inputs every iteration, so
// the compiler recomputes every chain instead of hoisting or merging them; the chains are
// independent, so throughput, not latency, is what gets measured.
#include <immintrin.h>

#include <cstdint>

#include "ops/avx2/compute_peak_steps.h"
#include "ops/compute_peak_kernels.h"

namespace hearth::ops::detail::avx2 {

double peak_f32_fma(int64_t iters) {
  constexpr int kChains = 10;  // > FMA latency x pipes
  __m256 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_ps(0.001f * static_cast<float>(i));
  __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(1e-4f);
  for (int64_t n = 0; n < iters; ++n) {
    opaque(a);
    opaque(b);
#pragma GCC unroll 10
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  }
  __m256 s = acc[0];
  for (int i = 1; i < kChains; ++i) s = _mm256_add_ps(s, acc[i]);
  sink = static_cast<int>(_mm256_cvtss_f32(s));
  return static_cast<double>(iters) * kChains * 8 * 2;
}

// As the Q8_0 tile (PQ8): per weight vector |w| once, then for each of 6 tokens sign(a, w),
// maddubs(|w|, ·), madd(·, 1) and an int32 add.
double peak_s8s8(int64_t iters) {
  const __m256i ones = _mm256_set1_epi16(1);
  run_int_step(iters, _mm256_set1_epi8(-5), [&](__m256i w, const int8_t* a, __m256i* acc) {
    const __m256i aw = _mm256_sign_epi8(w, w);
#pragma GCC unroll 6
    for (int j = 0; j < 6; ++j)
      acc[j] = _mm256_add_epi32(
          acc[j],
          _mm256_madd_epi16(_mm256_maddubs_epi16(aw, _mm256_sign_epi8(bcast(a + 4 * j), w)), ones));
  });
  return static_cast<double>(iters) * 6 * 32 * 2;
}

// As the nibble tiles (PQ4, Q4_K): per weight vector the low and high nibbles (and, shift, and),
// then for each of 6 tokens two maddubs and their int16 adds (sums wrap: only the rate counts).
double peak_u8s8(int64_t iters) {
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  run_int_step(iters, _mm256_set1_epi8(0x5A), [&](__m256i w, const int8_t* a, __m256i* acc) {
    const __m256i lo = _mm256_and_si256(w, m4);
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(w, 4), m4);
#pragma GCC unroll 6
    for (int j = 0; j < 6; ++j)
      acc[j] = _mm256_add_epi16(acc[j],
                                _mm256_add_epi16(_mm256_maddubs_epi16(lo, bcast(a + 4 * j)),
                                                 _mm256_maddubs_epi16(hi, bcast(a + 32 + 4 * j))));
  });
  return static_cast<double>(iters) * 6 * 64 * 2;
}

}  // namespace hearth::ops::detail::avx2
