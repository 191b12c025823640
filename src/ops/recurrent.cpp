// Recurrent-layer kernels: dispatch to AVX2, and the scalar references (the same FMA order).
#include "ops/recurrent.h"

#include <cmath>
#include <vector>

#include "ops/cpu_features.h"

namespace hearth::ops {
namespace {

constexpr float kGeluC = 0.7978845608028654f;  // √(2/π)

}  // namespace

void conv_taps(const float* const* rows, const float* taps, int64_t stride, int64_t K, float* out,
               int64_t n) {
  if (n <= 0) return;
  if (use_avx2()) return avx2::conv_taps(rows, taps, stride, K, out, n);
  for (int64_t c = 0; c < n; ++c) {
    float acc = 0.0f;
    for (int64_t i = 0; i < K; ++i) acc = std::fma(taps[i * stride + c], rows[i][c], acc);
    out[c] = acc;
  }
}

void silu_inplace(float* x, int64_t n) {
  if (n <= 0) return;
  if (use_avx2()) return avx2::silu_inplace(x, n);
  for (int64_t i = 0; i < n; ++i) x[i] = x[i] / (1.0f + std::exp(-x[i]));
}

void sigmoid_gate(float* x, const float* g, int64_t n) {
  if (n <= 0) return;
  if (use_avx2()) return avx2::sigmoid_gate(x, g, n);
  for (int64_t i = 0; i < n; ++i) x[i] = x[i] / (1.0f + std::exp(-g[i]));
}

void gelu_mul(float* g, const float* u, int64_t n) {
  if (n <= 0) return;
  if (use_avx2()) return avx2::gelu_mul(g, u, n);
  for (int64_t i = 0; i < n; ++i) {
    const float x = g[i];
    const float y = kGeluC * (x + 0.044715f * (x * x * x));
    g[i] = x / (1.0f + std::exp(-2.0f * y)) * u[i];
  }
}

void delta_rule_step(float* S, const float* q, const float* k, const float* v, float decay,
                     float beta, float* o, int64_t dk, int64_t dv) {
  if (use_avx2() && dv % 8 == 0) return avx2::delta_rule_step(S, q, k, v, decay, beta, o, dk, dv);
  for (int64_t c = 0; c < dv; ++c) {
    float kv = 0.0f;
    for (int64_t i = 0; i < dk; ++i) {
      float& s = S[i * dv + c];
      s *= decay;
      kv = std::fma(s, k[i], kv);
    }
    const float delta = beta * (v[c] - kv);
    float acc = 0.0f;
    for (int64_t i = 0; i < dk; ++i) {
      float& s = S[i * dv + c];
      s = std::fma(k[i], delta, s);
      acc = std::fma(s, q[i], acc);
    }
    o[c] = acc;
  }
}

void delta_rule(float* S, const DeltaRuleTokens& a, int64_t dk, int64_t dv) {
  if (a.n <= 0) return;
  if (use_avx2() && dv % 8 == 0) return avx2::delta_rule(S, a, dk, dv);
  for (int64_t t = 0; t < a.n; ++t)
    delta_rule_step(S, a.q + t * a.qkv_stride, a.k + t * a.qkv_stride, a.v + t * a.qkv_stride,
                    a.decay[t * a.gate_stride], a.beta[t * a.gate_stride], a.o + t * a.o_stride, dk,
                    dv);
}

}  // namespace hearth::ops
