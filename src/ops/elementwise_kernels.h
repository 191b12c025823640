// Internal: the per-ISA entry points behind ops/elementwise.h (dispatch in elementwise.cpp).
#pragma once

#include <cstdint>

namespace hearth::ops::avx2 {

void rmsnorm_rows(const float* x, const float* w, float* y, int64_t n_tok, int64_t n, float eps);
void add_inplace(float* x, const float* y, int64_t n);
void mul_inplace(float* x, const float* y, int64_t n);
void silu_mul(float* g, const float* u, int64_t n);
void rope(float* heads, int64_t n_heads, int64_t head_dim, int64_t n_rot, const float* cos,
          const float* sin, bool neox);
void exp_inplace(float* x, int64_t n);
int64_t first_max_index(const float* x, int64_t n);
double sum_exp(const float* x, int64_t n, float shift);
void to_f16(const float* src, uint16_t* dst, int64_t n);

}  // namespace hearth::ops::avx2
