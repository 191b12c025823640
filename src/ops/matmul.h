// Weight × activation products: the fast kernels (dispatched on simd_level()) and their scalar
// references. Activations are quantized on the fly to the 8-bit block format a weight type pairs
// with (Q8_0 for the 32-element formats, Q8_K for K-quants) where integer dot products are
// faster; F32/F16/BF16 weights multiply f32 activations.
//
// Batch invariance: y[t][r] depends only on weight row r and activation row t — never on n_tok,
// the thread count or how rows are split — so a sequence's logits are bit-identical however it
// was batched or chunked (the prefix cache relies on this).
#pragma once

#include <cstdint>
#include <vector>

#include "ops/matrix.h"
#include "ops/thread_pool.h"
#include "quant/types.h"

namespace hearth::ops {

// The activation format used with weights of type `w`.
TensorType activation_type(TensorType w);

// Activations quantized once and reusable for several matrices of the same width and
// activation type (e.g. Q, K and V projections of one input).
struct QuantizedActivations {
  TensorType type = TensorType::F32;
  int64_t n_tok = 0;
  int64_t n_cols = 0;
  size_t row_stride = 0;  // bytes per token row
  std::vector<uint8_t> data;
};

void quantize_activations(TensorType act_type, const float* x, int64_t n_tok, int64_t n_cols,
                          QuantizedActivations& out);

// y (n_tok rows of w.n_rows floats) = x (n_tok rows of w.n_cols) · Wᵀ.
void matmul(const MatrixView& w, const QuantizedActivations& x, float* y, ThreadPool& pool);
void matmul(const MatrixView& w, const float* x, int64_t n_tok, float* y, ThreadPool& pool);

// The scalar reference of the fast path, with the same activation quantization: the oracle the
// SIMD kernels are tested against (exact for the integer parts).
void matmul_scalar(const MatrixView& w, const QuantizedActivations& x, float* y);

}  // namespace hearth::ops
