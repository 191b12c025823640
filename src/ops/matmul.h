// Weight × activation products: the fast kernels (dispatched on simd_level()) and their scalar
// references. Activations are quantized on the fly to the 8-bit block format a weight type pairs
// with (Q8_0 for the 32-element formats, Q8_K for K-quants) where integer dot products are
// faster; F32/F16/BF16 weights multiply f32 activations.
//
// Batch invariance: y[t][r] depends only on weight row r and activation row t — never on n_tok,
// the thread count or how rows are split — so a sequence's logits are bit-identical however it
// was batched or chunked (the prefix cache relies on this).
//
// The math. Integer parts are exact and the same at every SIMD level; only the float
// accumulation differs between the scalar reference and the AVX2 kernels:
//   32-element formats × Q8_0:  y = Σ_b (dw_b·da_b)·I_b  [+ (mw_b·da_b)·S_b for Q4_1/Q5_1]
//     with I_b = Σ_i qw_i·qa_i the exact integer dot of block b (qw the signed level, e.g.
//     nibble − 8 for Q4_0; unsigned for Q4_1/Q5_1) and S_b = Σ_i qa_i.
//     Scalar: those terms added in block order. AVX2: the exact unsigned-level dots as int32
//     lane partials (8 lanes; 4 per row for the 4-/5-bit formats, two rows sharing a vector)
//     FMA'd per lane with dw·da in block order, plus the offset / min term Σ_b cw_b·(f·da_b·S_b)
//     (cw = dw, f = −8 / −16 for Q4_0 / Q5_0; cw = mw, f = 1 for Q4_1 / Q5_1) accumulated in 8
//     lanes over blocks.
//   Q4_K/Q5_K × Q8_K: y = Σ_sb (d·da)·Σ_j sc_j·I_j − (dmin·da)·Σ_j m_j·(bsum_2j + bsum_2j+1).
//   Q6_K × Q8_K:       y = Σ_sb (d·da)·(Σ_k sc_k·I_k − 32·Σ_k sc_k·bsum_k), q unsigned 0..63.
//     AVX2: eight int32 lane partials per super-block (sub-block scales applied by vpmaddwd),
//     converted and FMA'd per lane.
//   F32/F16/BF16 × f32: eight lane sums over 8-element chunks (mul+add in the scalar
//     reference, FMA in AVX2), reduced as ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7)), then the
//     n_cols % 8 tail added in order.
// Tolerance (tested): |y_avx2 − y_scalar| ≤ (2·steps + 32)·2⁻²⁴·Σ|terms|, steps = blocks
// (2 per block with an offset/min, 2 per super-block + 8 for K-quants, 8-element chunks for the
// F32 family) and Σ|terms| the sum of the magnitudes the kernels accumulate (offset terms
// included) — about 1e-5 of Σ|terms| at width 3072 with 32-element blocks. With unit scales
// both paths return the exact integer dot products.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ops/matrix.h"
#include "ops/thread_pool.h"
#include "quant/types.h"

namespace hearth::ops {

// The activation format used with weights of type `w`.
TensorType activation_type(TensorType w);

// True when matmul supports weights of type `w` (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
// Q4_K, Q5_K, Q6_K).
bool matmul_supported(TensorType w);

// The kernel matmul runs for `w` at the current level: "avx512-vnni" (the AVX-512 build of the
// packed kernels), "avx-vnni", "avx2" or "scalar" (`hearth bench` prints it per weight type).
// It asks the dispatch itself, with no rows to compute, so it cannot drift from it.
const char* matmul_kernel_name(const MatrixView& w);

// True when weights of type `w` have a kernel at the current simd_level() (otherwise matmul
// uses the scalar path).
bool matmul_has_simd_kernel(TensorType w);

// Activations quantized once and reusable for several matrices of the same width and
// activation type (e.g. Q, K and V projections of one input).
//
// Row layout (one row per token, row_stride bytes, a multiple of 64):
//   F32:  float x[n_cols]
//   Q8_0: int8 qs[n_cols] | float d[n_cols/32] | int16 sum[n_cols/32]   (sum = Σ qs of a block)
//   Q8_K: int8 qs[n_cols] | float d[n_cols/256] | int16 bsums[n_cols/16]
// qs and d equal quant/quantize_row's Q8_0 / Q8_K blocks of the same row bit for bit (Q8_0's
// f16 scale stored widened to float); accessors below.
struct QuantizedActivations {
  TensorType type = TensorType::F32;
  int64_t n_tok = 0;
  int64_t n_cols = 0;
  size_t row_stride = 0;  // bytes per token row
  std::vector<uint8_t> data;
};

void quantize_activations(TensorType act_type, const float* x, int64_t n_tok, int64_t n_cols,
                          QuantizedActivations& out);
// The scalar reference quantizer (bit-identical to quantize_activations at every level).
void quantize_activations_scalar(TensorType act_type, const float* x, int64_t n_tok, int64_t n_cols,
                                 QuantizedActivations& out);

// The same, filled from several threads: prepare_activations sizes `out` for n_tok rows (their
// contents unset), then each quantize_activation_rows call fills rows [t0, t1) from x (row t at
// x + t·n_cols), bit-identical to quantize_activations' rows.
void prepare_activations(TensorType act_type, int64_t n_tok, int64_t n_cols,
                         QuantizedActivations& out);
void quantize_activation_rows(const float* x, int64_t t0, int64_t t1, QuantizedActivations& out);

// Bytes of one activation row (the row_stride quantize_activations uses).
size_t activation_row_stride(TensorType act_type, int64_t n_cols);
// Views into token row t of quantized activations (Q8_0/Q8_K); f32 for F32.
const int8_t* activation_qs(const QuantizedActivations& x, int64_t t);
const float* activation_scales(const QuantizedActivations& x, int64_t t);
const int16_t* activation_sums(const QuantizedActivations& x, int64_t t);
const float* activation_f32(const QuantizedActivations& x, int64_t t);

// y (n_tok rows of w.n_rows floats) = x (n_tok rows of w.n_cols) · Wᵀ.
void matmul(const MatrixView& w, const QuantizedActivations& x, float* y, ThreadPool& pool);
void matmul(const MatrixView& w, const float* x, int64_t n_tok, float* y, ThreadPool& pool);

// Several products over the same activations (at most 8, each x's type and width) as one
// parallel region; y of each as matmul's. Each row's result is the same as matmul's.
struct MatmulOut {
  const MatrixView* w = nullptr;
  float* y = nullptr;
};
void matmul_group(std::span<const MatmulOut> outs, const QuantizedActivations& x, ThreadPool& pool);

// Rows [r0, r1) of the product on the calling thread (y still has n_tok rows of w.n_rows).
void matmul_rows(const MatrixView& w, const QuantizedActivations& x, float* y, int64_t r0,
                 int64_t r1);

// The scalar reference of the fast path, with the same activation quantization: the oracle the
// SIMD kernels are tested against (exact for the integer parts).
void matmul_scalar(const MatrixView& w, const QuantizedActivations& x, float* y);

}  // namespace hearth::ops
