// Elementwise kernels: runtime dispatch to the AVX2 versions, scalar fallbacks built on the
// references in ops/reference.h.
#include "ops/elementwise.h"

#include <cmath>

#include "ops/cpu_features.h"
#include "ops/elementwise_kernels.h"
#include "ops/reference.h"
#include "quant/half.h"

namespace hearth::ops {
void rmsnorm(const float* x, const float* w, float* y, int64_t n_tok, int64_t n, float eps) {
  if (n_tok <= 0 || n <= 0) return;
  if (use_avx2()) return avx2::rmsnorm_rows(x, w, y, n_tok, n, eps);
  for (int64_t t = 0; t < n_tok; ++t) ref::rmsnorm(x + t * n, w, y + t * n, n, eps);
}

void add_inplace(float* x, const float* y, int64_t n) {
  if (n <= 0) return;
  if (use_avx2()) return avx2::add_inplace(x, y, n);
  for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

void mul_inplace(float* x, const float* y, int64_t n) {
  if (n <= 0) return;
  if (use_avx2()) return avx2::mul_inplace(x, y, n);
  for (int64_t i = 0; i < n; ++i) x[i] *= y[i];
}

void silu_mul(float* g, const float* u, int64_t n) {
  if (n <= 0) return;
  if (use_avx2()) return avx2::silu_mul(g, u, n);
  for (int64_t i = 0; i < n; ++i) g[i] = ref::silu(g[i]) * u[i];
}

void rope(float* heads, int64_t n_heads, int64_t head_dim, int64_t n_rot, const float* cos,
          const float* sin, bool neox) {
  if (n_heads <= 0 || n_rot <= 1) return;
  if (use_avx2()) return avx2::rope(heads, n_heads, head_dim, n_rot, cos, sin, neox);
  for (int64_t h = 0; h < n_heads; ++h)
    ref::rope_apply(heads + h * head_dim, n_rot, cos, sin, neox);
}

void exp_inplace(float* x, int64_t n) {
  if (n <= 0) return;
  if (use_avx2()) return avx2::exp_inplace(x, n);
  for (int64_t i = 0; i < n; ++i) x[i] = std::exp(x[i]);
}

int64_t first_max_index(const float* x, int64_t n) {
  if (n <= 1) return 0;
  if (use_avx2()) return avx2::first_max_index(x, n);
  return ref::first_max_index(x, n);
}

double sum_exp(const float* x, int64_t n, float shift) {
  if (n <= 0) return 0.0;
  if (use_avx2()) return avx2::sum_exp(x, n, shift);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i)
    if (x[i] > -INFINITY) sum += static_cast<double>(std::exp(x[i] - shift));
  return sum;
}

void to_f16(const float* src, uint16_t* dst, int64_t n) {
  if (n <= 0) return;
  if (use_avx2()) return avx2::to_f16(src, dst, n);
  f32_to_f16_row(src, dst, n);
}

}  // namespace hearth::ops
