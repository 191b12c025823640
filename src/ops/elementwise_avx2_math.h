// AVX2+FMA vector math shared by the SIMD kernels (elementwise, attention). Include only from
// translation units compiled with -mavx2 -mfma (src/ops/avx2/).
#pragma once

#include <immintrin.h>

namespace hearth::ops::avx2 {

// e^x for 8 floats. Range reduction x = n*ln2 + r (|r| <= ln2/2, Cody-Waite split of ln2 with
// FMA), e^r by its degree-7 Taylor polynomial (truncation error < 6e-9 relative), then the
// scale 2^n applied as two exact power-of-two factors so the result under/overflows correctly
// (subnormals included, +inf above ~88.72). Measured error vs the correctly rounded value:
// <= 2 ulp over the normal range (tested); exp(0) == 1 exactly, exp(-inf) == 0, exp(+inf) ==
// +inf, NaN propagates.
inline __m256 exp_ps(__m256 x) {
  const __m256 log2e = _mm256_set1_ps(1.44269504088896341f);
  const __m256 ln2_hi = _mm256_set1_ps(0.693145751953125f);  // 16 significant bits
  const __m256 ln2_lo = _mm256_set1_ps(1.42860682030941723e-6f);
  const __m256 xc = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-110.0f)), _mm256_set1_ps(89.0f));
  const __m256 n =
      _mm256_round_ps(_mm256_mul_ps(xc, log2e), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, ln2_hi, xc);
  r = _mm256_fnmadd_ps(n, ln2_lo, r);
  // 1 + r + r^2/2! + ... + r^7/7!, Horner.
  __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  // 2^n = 2^e1 * 2^e2 with e1 = floor(n/2), e2 = n - e1, both within [-80, 65]: each factor is
  // a normal float, the first product is exact, so the result is rounded once.
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i e1 = _mm256_srai_epi32(ni, 1);
  const __m256i e2 = _mm256_sub_epi32(ni, e1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(e1, bias), 23));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(e2, bias), 23));
  const __m256 y = _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
  const __m256 is_nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
  return _mm256_blendv_ps(y, x, is_nan);
}

// Sum of the 8 lanes in a fixed order: ((l0+l1)+(l2+l3)) + ((l4+l5)+(l6+l7)).
inline float hsum_ps(__m256 v) {
  __m256 t = _mm256_hadd_ps(v, v);
  t = _mm256_hadd_ps(t, t);
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
  return _mm_cvtss_f32(s);
}

inline float hmax_ps(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
  return _mm_cvtss_f32(m);
}

}  // namespace hearth::ops::avx2
