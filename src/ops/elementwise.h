// Fast elementwise kernels of the forward pass (SIMD with scalar references in ops/reference.h).
#pragma once

#include <cstdint>

namespace hearth::ops {

// Accuracy against the scalar references in ops/reference.h (tests/ops/elementwise_test.cpp):
// add_inplace and rope compute the same float operations in the same order as the references
// (bit-exact); rmsnorm too, with its double sum of squares added in a fixed order that depends
// only on n (<= 1 ulp, bit-exact in practice); silu_mul uses a vector exp accurate to 2 ulp and
// is within 4 ulp of ref::silu(g) * u.

// y = rmsnorm(x) * w for n_tok rows of width n (in place allowed; w may be null = no scaling).
// Each row is normalised independently, so row results do not depend on n_tok.
void rmsnorm(const float* x, const float* w, float* y, int64_t n_tok, int64_t n, float eps);

// x += y over n elements (residual add).
void add_inplace(float* x, const float* y, int64_t n);

// x *= y over n elements (gates of the short conv).
void mul_inplace(float* x, const float* y, int64_t n);

// g = silu(g) * u over n elements (gated FFN).
void silu_mul(float* g, const float* u, int64_t n);

// RoPE on n_heads heads of width head_dim laid out back to back, rotating the first n_rot dims
// with precomputed cos/sin (n_rot/2 each) for this token's position.
void rope(float* heads, int64_t n_heads, int64_t head_dim, int64_t n_rot, const float* cos,
          const float* sin, bool neox);

// dst = f16(src) over n elements, round to nearest even: bit-identical to quant/half.h's
// f32_to_f16 (the SIMD path hands any vector holding a NaN to it, for the same payload).
void to_f16(const float* src, uint16_t* dst, int64_t n);

// ref::first_max_index (greedy decoding's argmax over a vocabulary's logits), the same index.
int64_t first_max_index(const float* x, int64_t n);

// The sum of e^(x[i] - shift) over the x[i] above -inf (NaN skipped), accumulated in double
// (the SIMD kernels' exp: <= 2 ulp per term; the summation order differs from a plain loop's).
double sum_exp(const float* x, int64_t n, float shift);

// x = e^x over n elements (the SIMD kernels' exp: <= 2 ulp; e^-inf = 0, e^+inf = inf).
void exp_inplace(float* x, int64_t n);

}  // namespace hearth::ops
