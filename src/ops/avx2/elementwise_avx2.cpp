// AVX2+FMA elementwise kernels (compiled with -mavx2 -mfma -mf16c; called only when
// simd_level() == Avx2). Where the reference is plain float arithmetic these kernels perform
// the same operations in the same order, so they match it exactly. GCC contracts a*b + c into
// an FMA in C++ mode (-ffp-contract=fast), which would change the rounding: products that feed
// an add are passed through opaque() first, which forces them to be rounded on their own.
#include <immintrin.h>

#include <cmath>
#include <cstring>

#include "ops/elementwise_avx2_math.h"
#include "ops/elementwise_kernels.h"
#include "quant/half.h"

namespace hearth::ops::avx2 {
namespace {

inline __m256 opaque(__m256 v) {
  asm("" : "+x"(v));
  return v;
}
inline float opaque(float v) {
  asm("" : "+x"(v));
  return v;
}

// Sum of squares in double: x*x is exact in double, so only the (fixed) addition order
// differs from the reference's sequential double sum - far below float resolution.
double sum_squares(const float* x, int64_t n) {
  __m256d a0 = _mm256_setzero_pd(), a1 = _mm256_setzero_pd();
  __m256d a2 = _mm256_setzero_pd(), a3 = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 v0 = _mm256_loadu_ps(x + i), v1 = _mm256_loadu_ps(x + i + 8);
    const __m256d d0 = _mm256_cvtps_pd(_mm256_castps256_ps128(v0));
    const __m256d d1 = _mm256_cvtps_pd(_mm256_extractf128_ps(v0, 1));
    const __m256d d2 = _mm256_cvtps_pd(_mm256_castps256_ps128(v1));
    const __m256d d3 = _mm256_cvtps_pd(_mm256_extractf128_ps(v1, 1));
    a0 = _mm256_fmadd_pd(d0, d0, a0);
    a1 = _mm256_fmadd_pd(d1, d1, a1);
    a2 = _mm256_fmadd_pd(d2, d2, a2);
    a3 = _mm256_fmadd_pd(d3, d3, a3);
  }
  const __m256d s = _mm256_add_pd(_mm256_add_pd(a0, a1), _mm256_add_pd(a2, a3));
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, s);
  double ss = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
  for (; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];  // x*x exact: FMA is harmless
  return ss;
}

}  // namespace

void rmsnorm_rows(const float* x, const float* w, float* y, int64_t n_tok, int64_t n, float eps) {
  for (int64_t t = 0; t < n_tok; ++t) {
    const float* xr = x + t * n;
    float* yr = y + t * n;
    const double ss = sum_squares(xr, n);
    const float scale = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(n) + eps));
    const __m256 vs = _mm256_set1_ps(scale);
    int64_t i = 0;
    if (w) {
      for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(xr + i), vs);
        _mm256_storeu_ps(yr + i, _mm256_mul_ps(v, _mm256_loadu_ps(w + i)));
      }
      for (; i < n; ++i) yr[i] = xr[i] * scale * w[i];
    } else {
      for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(yr + i, _mm256_mul_ps(_mm256_loadu_ps(xr + i), vs));
      for (; i < n; ++i) yr[i] = xr[i] * scale * 1.0f;
    }
  }
}

void add_inplace(float* x, const float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm256_storeu_ps(x + i, _mm256_add_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    _mm256_storeu_ps(x + i + 8,
                     _mm256_add_ps(_mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(y + i + 8)));
  }
  for (; i < n; ++i) x[i] += y[i];
}

void mul_inplace(float* x, const float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  for (; i < n; ++i) x[i] *= y[i];
}

namespace {

inline __m256 silu_mul8(__m256 g, __m256 u) {
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 e = exp_ps(_mm256_xor_ps(g, _mm256_set1_ps(-0.0f)));  // e^-g
  return _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(one, e)), u);
}

}  // namespace

void silu_mul(float* g, const float* u, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(g + i, silu_mul8(_mm256_loadu_ps(g + i), _mm256_loadu_ps(u + i)));
  if (i < n) {  // tail through the same vector code, so every element gets the same formula
    alignas(32) float gb[8] = {}, ub[8] = {};
    const size_t rest = static_cast<size_t>(n - i);
    std::memcpy(gb, g + i, rest * sizeof(float));
    std::memcpy(ub, u + i, rest * sizeof(float));
    _mm256_store_ps(gb, silu_mul8(_mm256_load_ps(gb), _mm256_load_ps(ub)));
    std::memcpy(g + i, gb, rest * sizeof(float));
  }
}

// vcvtps2ph rounds to nearest even, overflows to inf and makes f16 subnormals as f32_to_f16
// does; only NaN payloads may differ, so a vector holding a NaN goes the scalar way.
void to_f16(const float* src, uint16_t* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(src + i);
    if (_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)) != 0) {
      f32_to_f16_row(src + i, dst + i, 8);
      continue;
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  if (i < n) f32_to_f16_row(src + i, dst + i, n - i);
}

void exp_inplace(float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, exp_ps(_mm256_loadu_ps(x + i)));
  if (i < n) {
    alignas(32) float b[8] = {};
    const size_t rest = static_cast<size_t>(n - i);
    std::memcpy(b, x + i, rest * sizeof(float));
    _mm256_store_ps(b, exp_ps(_mm256_load_ps(b)));
    std::memcpy(x + i, b, rest * sizeof(float));
  }
}

// Two passes instead of the reference's compare-and-branch per element: the largest value of
// x[1..n) (vmaxps returns its second operand when the first is NaN, so NaN never wins), then
// the first index holding it. Ties and zeros: the first value equal to the maximum (-0 == +0)
// is the one the reference keeps, as it only moves on a strictly larger value.
int64_t first_max_index(const float* x, int64_t n) {
  const float x0 = x[0] != x[0] ? -INFINITY : x[0];
  __m256 m[4];
  for (auto& v : m) v = _mm256_set1_ps(-INFINITY);
  int64_t i = 1;
  for (; i + 32 <= n; i += 32)
    for (int k = 0; k < 4; ++k) m[k] = _mm256_max_ps(_mm256_loadu_ps(x + i + 8 * k), m[k]);
  for (; i + 8 <= n; i += 8) m[0] = _mm256_max_ps(_mm256_loadu_ps(x + i), m[0]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, _mm256_max_ps(_mm256_max_ps(m[0], m[1]), _mm256_max_ps(m[2], m[3])));
  float best = -INFINITY;
  for (float v : lanes) best = v > best ? v : best;
  for (; i < n; ++i) best = x[i] > best ? x[i] : best;
  if (!(best > x0)) return 0;
  const __m256 b = _mm256_set1_ps(best);
  for (i = 1; i + 8 <= n; i += 8) {
    const int hits = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i), b, _CMP_EQ_OQ));
    if (hits != 0) return i + __builtin_ctz(static_cast<unsigned>(hits));
  }
  for (; i < n; ++i)
    if (x[i] == best) return i;
  return 0;  // not reached: best is one of x[1..n)
}

double sum_exp(const float* x, int64_t n, float shift) {
  const __m256 s = _mm256_set1_ps(shift), low = _mm256_set1_ps(-INFINITY);
  __m256d acc[2] = {_mm256_setzero_pd(), _mm256_setzero_pd()};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m256 keep = _mm256_cmp_ps(v, low, _CMP_GT_OQ);  // false for -inf and NaN
    const __m256 e = _mm256_and_ps(exp_ps(_mm256_sub_ps(v, s)), keep);
    acc[0] = _mm256_add_pd(acc[0], _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
    acc[1] = _mm256_add_pd(acc[1], _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
  }
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, _mm256_add_pd(acc[0], acc[1]));
  double sum = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
  for (; i < n; ++i)
    if (x[i] > -INFINITY) sum += static_cast<double>(std::exp(x[i] - shift));
  return sum;
}

void rope(float* heads, int64_t n_heads, int64_t head_dim, int64_t n_rot, const float* cos,
          const float* sin, bool neox) {
  const int64_t half = n_rot / 2;
  for (int64_t h = 0; h < n_heads; ++h) {
    float* x = heads + h * head_dim;
    int64_t i = 0;
    if (neox) {
      // (x[i], x[i+half]) pairs: a' = a*c - b*s, b' = a*s + b*c.
      for (; i + 8 <= half; i += 8) {
        const __m256 a = _mm256_loadu_ps(x + i), b = _mm256_loadu_ps(x + i + half);
        const __m256 c = _mm256_loadu_ps(cos + i), s = _mm256_loadu_ps(sin + i);
        _mm256_storeu_ps(x + i,
                         _mm256_sub_ps(opaque(_mm256_mul_ps(a, c)), opaque(_mm256_mul_ps(b, s))));
        _mm256_storeu_ps(x + i + half,
                         _mm256_add_ps(opaque(_mm256_mul_ps(a, s)), opaque(_mm256_mul_ps(b, c))));
      }
      for (; i < half; ++i) {
        const float a = x[i], b = x[i + half];
        x[i] = opaque(a * cos[i]) - opaque(b * sin[i]);
        x[i + half] = opaque(a * sin[i]) + opaque(b * cos[i]);
      }
    } else {
      // Interleaved (x[2i], x[2i+1]): v*[c,c] + swap(v)*[-s,s] per pair, 4 pairs a vector.
      const __m256i dup = _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3);
      const __m256 neg_even = _mm256_setr_ps(-0.0f, 0.0f, -0.0f, 0.0f, -0.0f, 0.0f, -0.0f, 0.0f);
      for (; i + 4 <= half; i += 4) {
        const __m256 v = _mm256_loadu_ps(x + 2 * i);
        const __m256 c =
            _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(cos + i)), dup);
        const __m256 s = _mm256_xor_ps(
            _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(sin + i)), dup), neg_even);
        const __m256 sw = _mm256_permute_ps(v, 0xB1);  // [x1, x0, x3, x2, ...]
        _mm256_storeu_ps(x + 2 * i,
                         _mm256_add_ps(opaque(_mm256_mul_ps(v, c)), opaque(_mm256_mul_ps(sw, s))));
      }
      for (; i < half; ++i) {
        const float a = x[2 * i], b = x[2 * i + 1];
        x[2 * i] = opaque(a * cos[i]) - opaque(b * sin[i]);
        x[2 * i + 1] = opaque(a * sin[i]) + opaque(b * cos[i]);
      }
    }
  }
}

}  // namespace hearth::ops::avx2
