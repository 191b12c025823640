// Reference kernels: plain, obviously-correct float code. They are the oracle the fast kernels
// (and every cache path) are tested against; keep them simple rather than fast.
#pragma once

#include <cmath>
#include <cstdint>

#include "ops/matrix.h"

namespace hearth::ref {

float dot(const float* a, const float* b, int64_t n);

// y = x / sqrt(mean(x^2) + eps) * w   (w may be null: no scaling). In-place allowed.
void rmsnorm(const float* x, const float* w, float* y, int64_t n, float eps);

// Y[t][r] = sum_c W[r][c] * X[t][c] for t < n_tok; X rows are W.n_cols wide, Y rows W.n_rows.
// Each weight row is dequantized once and reused for every token.
void matmul(const MatrixView& w, const float* x, int64_t n_tok, float* y);

// Row `r` of a matrix, dequantized to f32 (embedding lookup).
void get_row(const MatrixView& w, int64_t r, float* out);

void softmax(float* x, int64_t n);  // in place, max-subtracted

// Greedy decoding's pick: the first index whose value beats x[0] and every value before it, NaN
// beating nothing (and an x[0] of NaN counting as -inf); 0 when nothing beats x[0]. n >= 1.
int64_t first_max_index(const float* x, int64_t n);

inline float silu(float x) {
  return x / (1.0f + std::exp(-x));
}

inline float sigmoid(float x) {
  return 1.0f / (1.0f + std::exp(-x));
}

// log(1 + e^x), without overflow for large x.
inline float softplus(float x) {
  return x > 20.0f ? x : std::log1p(std::exp(x));
}

// Gemma's GELU: the tanh approximation, evaluated exactly in f32 (no lookup table).
inline float gelu_tanh(float x) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * (x + 0.044715f * x * x * x)));
}

// y = x / sqrt(sum(x^2) + eps), in place allowed (the Gated DeltaNet's q/k normalisation).
void l2norm(const float* x, float* y, int64_t n, float eps);

// RoPE over one head of width `head_dim`, rotating the first n_rot dims: cos/sin hold n_rot/2
// values for this position. Interleaved rotates (x[2i], x[2i+1]); neox rotates (x[i],
// x[i+n_rot/2]).
void rope_apply(float* head, int64_t n_rot, const float* cos, const float* sin, bool neox);

// RoPE angles for one position: cos/sin of theta_i for i < n_rot/2, with linear scaling,
// YaRN and per-pair frequency divisors (llama3-style rope_freqs) folded in.
struct RopeConfig {
  int64_t n_rot = 0;
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;   // 1 / linear or YaRN factor
  float ext_factor = 0.0f;   // YaRN extrapolation mix (0 = off)
  float attn_factor = 1.0f;  // YaRN magnitude scale
  float beta_fast = 32.0f, beta_slow = 1.0f;
  int64_t orig_ctx = 0;                 // YaRN: original training context
  const float* freq_factors = nullptr;  // n_rot/2 divisors, or null
};
void rope_cos_sin(const RopeConfig& c, int64_t pos, float* cos, float* sin);

}  // namespace hearth::ref
