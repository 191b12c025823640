// The compute probe's loops. An empty asm statement "changes" the inputs every iteration, so
// the compiler recomputes every chain instead of hoisting or merging them; the chains are
// independent, so throughput, not latency, is what gets measured.
#include <immintrin.h>

#include <cstdint>

#include "tools/avx2/compute_peak_steps.h"
#include "tools/compute_peak_kernels.h"

namespace hearth::tools::detail::avx2 {

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

// As the Q8_0 tile (PQ8): sign(a, w), maddubs(|w|, ·), madd(·, 1) and an int32 add per token.
double peak_s8s8(int64_t iters) {
  const __m256i ones = _mm256_set1_epi16(1);
  return run_sign_step(iters, [&](__m256i acc, __m256i aw, __m256i sa) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(aw, sa), ones));
  });
}

// As the nibble tiles (PQ4, Q4_K): two maddubs and their int16 adds per token (sums wrap: only
// the rate counts).
double peak_u8s8(int64_t iters) {
  return run_nibble_step(iters, [](__m256i acc, __m256i lo, __m256i alo, __m256i hi, __m256i ahi) {
    return _mm256_add_epi16(
        acc, _mm256_add_epi16(_mm256_maddubs_epi16(lo, alo), _mm256_maddubs_epi16(hi, ahi)));
  });
}

}  // namespace hearth::tools::detail::avx2
