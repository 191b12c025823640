// AVX2+FMA versions of ops/recurrent.h: the channel / value-column loops 8 lanes at a time, with
// the scalar references' operations per lane.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "ops/elementwise_avx2_math.h"
#include "ops/recurrent.h"

namespace hearth::ops::avx2 {
namespace {

// x / (1 + e^(-a)): silu for a = x, the tanh GELU for a = 2y.
inline __m256 sigmoid_mul8(__m256 x, __m256 a) {
  const __m256 e = exp_ps(_mm256_xor_ps(a, _mm256_set1_ps(-0.0f)));
  return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

inline __m256 gelu_mul8(__m256 x, __m256 u) {
  const __m256 x3 = _mm256_mul_ps(_mm256_mul_ps(x, x), x);
  const __m256 inner = _mm256_add_ps(x, _mm256_mul_ps(_mm256_set1_ps(0.044715f), x3));
  const __m256 y = _mm256_mul_ps(_mm256_set1_ps(0.7978845608028654f), inner);
  return _mm256_mul_ps(sigmoid_mul8(x, _mm256_mul_ps(_mm256_set1_ps(2.0f), y)), u);
}

// Applies f to n elements 8 at a time; the tail goes through the same vector code in a buffer.
template <typename F>
inline void map8(float* x, const float* u, int64_t n, F f) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(x + i, f(_mm256_loadu_ps(x + i), _mm256_loadu_ps(u + i)));
  if (i < n) {
    alignas(32) float xb[8] = {}, ub[8] = {};
    const size_t rest = static_cast<size_t>(n - i);
    std::memcpy(xb, x + i, rest * sizeof(float));
    std::memcpy(ub, u + i, rest * sizeof(float));
    _mm256_store_ps(xb, f(_mm256_load_ps(xb), _mm256_load_ps(ub)));
    std::memcpy(x + i, xb, rest * sizeof(float));
  }
}

}  // namespace

void conv_taps(const float* const* rows, const float* taps, int64_t stride, int64_t K, float* out,
               int64_t n) {
  int64_t c = 0;
  for (; c + 8 <= n; c += 8) {
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < K; ++i)
      acc = _mm256_fmadd_ps(_mm256_loadu_ps(taps + i * stride + c), _mm256_loadu_ps(rows[i] + c),
                            acc);
    _mm256_storeu_ps(out + c, acc);
  }
  for (; c < n; ++c) {
    __m128 acc = _mm_setzero_ps();
    for (int64_t i = 0; i < K; ++i)
      acc = _mm_fmadd_ss(_mm_set_ss(taps[i * stride + c]), _mm_set_ss(rows[i][c]), acc);
    out[c] = _mm_cvtss_f32(acc);
  }
}

void silu_inplace(float* x, int64_t n) {
  map8(x, x, n, [](__m256 a, __m256) { return sigmoid_mul8(a, a); });
}

void gelu_mul(float* g, const float* u, int64_t n) {
  map8(g, u, n, gelu_mul8);
}

void sigmoid_gate(float* x, const float* g, int64_t n) {
  map8(x, g, n, sigmoid_mul8);
}

// Columns in blocks of 32 (4 vectors): kv, delta and o of a block stay in registers while the
// block's dk rows of S are walked twice (L1-resident: 16 KiB for 64 x 64).
void delta_rule_step(float* S, const float* q, const float* k, const float* v, float decay,
                     float beta, float* o, int64_t dk, int64_t dv) {
  const __m256 vdecay = _mm256_set1_ps(decay), vbeta = _mm256_set1_ps(beta);
  for (int64_t c0 = 0; c0 < dv; c0 += 32) {
    const int nb = static_cast<int>(std::min<int64_t>(32, dv - c0) / 8);
    __m256 kv[4], acc[4];
    for (int b = 0; b < 4; ++b) kv[b] = acc[b] = _mm256_setzero_ps();
    for (int64_t i = 0; i < dk; ++i) {
      float* row = S + i * dv + c0;
      const __m256 ki = _mm256_set1_ps(k[i]);
      for (int b = 0; b < nb; ++b) {
        const __m256 s = _mm256_mul_ps(_mm256_loadu_ps(row + 8 * b), vdecay);
        _mm256_storeu_ps(row + 8 * b, s);
        kv[b] = _mm256_fmadd_ps(s, ki, kv[b]);
      }
    }
    __m256 delta[4];
    for (int b = 0; b < nb; ++b)
      delta[b] = _mm256_mul_ps(vbeta, _mm256_sub_ps(_mm256_loadu_ps(v + c0 + 8 * b), kv[b]));
    for (int64_t i = 0; i < dk; ++i) {
      float* row = S + i * dv + c0;
      const __m256 ki = _mm256_set1_ps(k[i]), qi = _mm256_set1_ps(q[i]);
      for (int b = 0; b < nb; ++b) {
        const __m256 s = _mm256_fmadd_ps(ki, delta[b], _mm256_loadu_ps(row + 8 * b));
        _mm256_storeu_ps(row + 8 * b, s);
        acc[b] = _mm256_fmadd_ps(s, qi, acc[b]);
      }
    }
    for (int b = 0; b < nb; ++b) _mm256_storeu_ps(o + c0 + 8 * b, acc[b]);
  }
}

// Columns in blocks of 32 as delta_rule_step; per block, token t's second walk (S += k delta^T,
// o = S^T q) also applies token t+1's decay and accumulates its S^T k, so S is walked n+1 times
// for n tokens instead of 2n.
void delta_rule(float* S, const DeltaRuleTokens& a, int64_t dk, int64_t dv) {
  for (int64_t c0 = 0; c0 < dv; c0 += 32) {
    const int nb = static_cast<int>(std::min<int64_t>(32, dv - c0) / 8);
    __m256 kv[4];
    for (int b = 0; b < 4; ++b) kv[b] = _mm256_setzero_ps();
    {  // token 0's decay and S^T k
      const __m256 vdecay = _mm256_set1_ps(a.decay[0]);
      for (int64_t i = 0; i < dk; ++i) {
        float* row = S + i * dv + c0;
        const __m256 ki = _mm256_set1_ps(a.k[i]);
        for (int b = 0; b < nb; ++b) {
          const __m256 s = _mm256_mul_ps(_mm256_loadu_ps(row + 8 * b), vdecay);
          _mm256_storeu_ps(row + 8 * b, s);
          kv[b] = _mm256_fmadd_ps(s, ki, kv[b]);
        }
      }
    }
    for (int64_t t = 0; t < a.n; ++t) {
      const float *q = a.q + t * a.qkv_stride, *k = a.k + t * a.qkv_stride,
                  *v = a.v + t * a.qkv_stride;
      const __m256 vbeta = _mm256_set1_ps(a.beta[t * a.gate_stride]);
      __m256 delta[4], acc[4], kv_next[4];
      for (int b = 0; b < nb; ++b) {
        delta[b] = _mm256_mul_ps(vbeta, _mm256_sub_ps(_mm256_loadu_ps(v + c0 + 8 * b), kv[b]));
        acc[b] = kv_next[b] = _mm256_setzero_ps();
      }
      const bool next = t + 1 < a.n;
      const float* k1 = next ? k + a.qkv_stride : k;
      const __m256 vdecay1 = _mm256_set1_ps(next ? a.decay[(t + 1) * a.gate_stride] : 1.0f);
      for (int64_t i = 0; i < dk; ++i) {
        float* row = S + i * dv + c0;
        const __m256 ki = _mm256_set1_ps(k[i]), qi = _mm256_set1_ps(q[i]);
        const __m256 k1i = _mm256_set1_ps(k1[i]);
        for (int b = 0; b < nb; ++b) {
          __m256 s = _mm256_fmadd_ps(ki, delta[b], _mm256_loadu_ps(row + 8 * b));
          acc[b] = _mm256_fmadd_ps(s, qi, acc[b]);
          if (next) {
            s = _mm256_mul_ps(s, vdecay1);
            kv_next[b] = _mm256_fmadd_ps(s, k1i, kv_next[b]);
          }
          _mm256_storeu_ps(row + 8 * b, s);
        }
      }
      for (int b = 0; b < nb; ++b) {
        _mm256_storeu_ps(a.o + t * a.o_stride + c0 + 8 * b, acc[b]);
        kv[b] = kv_next[b];
      }
    }
  }
}

}  // namespace hearth::ops::avx2
