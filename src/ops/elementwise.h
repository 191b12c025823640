// Fast elementwise kernels of the forward pass (SIMD with scalar references in ops/reference.h).
#pragma once

#include <cstdint>

namespace hearth::ops {

// y = rmsnorm(x) * w for n_tok rows of width n (in place allowed).
void rmsnorm(const float* x, const float* w, float* y, int64_t n_tok, int64_t n, float eps);

// x += y over n elements (residual add).
void add_inplace(float* x, const float* y, int64_t n);

// g = silu(g) * u over n elements (gated FFN).
void silu_mul(float* g, const float* u, int64_t n);

// RoPE on n_heads heads of width head_dim laid out back to back, rotating the first n_rot dims
// with precomputed cos/sin (n_rot/2 each) for this token's position.
void rope(float* heads, int64_t n_heads, int64_t head_dim, int64_t n_rot, const float* cos,
          const float* sin, bool neox);

}  // namespace hearth::ops
