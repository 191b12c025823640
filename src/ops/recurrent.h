// Kernels of the recurrent layers (Gated DeltaNet, LFM2's short conv) and of GeGLU, dispatched on
// simd_level() with scalar references beside them (recurrent.cpp).
//
// Batch invariance: each kernel handles one token (one head, one row) with a fixed operation
// order that depends only on its sizes, so a sequence's state and outputs do not depend on how
// its tokens were batched or chunked.
//
// Accuracy between levels (tests/ops/recurrent_test.cpp): conv_taps and delta_rule_step perform
// the same fused multiply-adds in the same order at every level (bit-exact); silu_inplace and
// gelu_mul use the vector exp (<= 2 ulp), within a few ulp of their scalar references.
#pragma once

#include <cstdint>

namespace hearth::ops {

// Depthwise causal convolution of one token over n channels: out[c] = Σ_{i<K} taps[i*stride + c]
// * rows[i][c], as an FMA chain over i ascending starting from 0. rows[i] is the input K-1-i
// tokens back (rows[K-1] the current token); taps are tap-major (K rows, `stride` apart).
void conv_taps(const float* const* rows, const float* taps, int64_t stride, int64_t K, float* out,
               int64_t n);

// x = silu(x) = x / (1 + e^-x) over n elements.
void silu_inplace(float* x, int64_t n);

// x = x * sigmoid(g) = x / (1 + e^-g) over n elements (qwen35's attention output gate).
void sigmoid_gate(float* x, const float* g, int64_t n);

// g = gelu(g) * u over n elements, with the tanh GELU 0.5 g (1 + tanh(√(2/π)(g + 0.044715 g³)))
// written as g / (1 + e^(-2y)) (the same function; no tanh call).
void gelu_mul(float* g, const float* u, int64_t n);

// One token of a Gated DeltaNet head. S is the dk x dv state (key-major: row i holds key
// dimension i over the dv values). With decay = e^g:
//   S = decay·S;  kv = Sᵀk;  delta = beta·(v − kv);  S = S + k·deltaᵀ;  o = Sᵀq
// Per value column c, kv and o are FMA chains over the key rows in order, starting from 0; the
// S updates are per element (S·decay, then fma(k_i, delta_c, S)). Columns are independent, so
// the AVX2 kernel runs them 8 lanes at a time with the same operations.
void delta_rule_step(float* S, const float* q, const float* k, const float* v, float decay,
                     float beta, float* o, int64_t dk, int64_t dv);

// n tokens of one Gated DeltaNet head, each exactly delta_rule_step (bit-identical to calling it
// token by token, so chunking changes nothing). Token t reads q/k/v at q + t*qkv_stride (and k,
// v likewise), its decay and beta at decay[t*gate_stride], beta[t*gate_stride], and writes o +
// t*o_stride. The AVX2 kernel walks S once per token: the update and output of token t fused
// with the decay and S^T k of token t+1 (the same per-element operations in the same order).
struct DeltaRuleTokens {
  const float *q = nullptr, *k = nullptr, *v = nullptr;
  int64_t qkv_stride = 0;
  const float *decay = nullptr, *beta = nullptr;
  int64_t gate_stride = 0;
  float* o = nullptr;
  int64_t o_stride = 0;
  int64_t n = 0;
};
void delta_rule(float* S, const DeltaRuleTokens& a, int64_t dk, int64_t dv);

namespace avx2 {
void delta_rule(float* S, const DeltaRuleTokens& a, int64_t dk, int64_t dv);
void conv_taps(const float* const* rows, const float* taps, int64_t stride, int64_t K, float* out,
               int64_t n);
void silu_inplace(float* x, int64_t n);
void gelu_mul(float* g, const float* u, int64_t n);
void sigmoid_gate(float* x, const float* g, int64_t n);
void delta_rule_step(float* S, const float* q, const float* k, const float* v, float decay,
                     float beta, float* o, int64_t dk, int64_t dv);
}  // namespace avx2

}  // namespace hearth::ops
