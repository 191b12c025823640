// Internal to the matmul implementation: the activation row layout and the per-ISA kernel entry
// points that matmul.cpp dispatches to (see ops/matmul.h for the math they share).
#pragma once

#include <cstddef>
#include <cstdint>

#include "ops/matrix.h"
#include "quant/types.h"

namespace hearth::ops::mm {

// Byte offsets inside one activation row (see QuantizedActivations in ops/matmul.h).
struct ActLayout {
  size_t d_off = 0;    // float scales (after n_cols int8 quants)
  size_t sum_off = 0;  // int16 sums
  size_t stride = 0;   // bytes per row, a multiple of 64
};
ActLayout act_layout(TensorType act_type, int64_t n_cols);

// A read-only view of n_tok activation rows.
struct Acts {
  TensorType type = TensorType::F32;
  const uint8_t* data = nullptr;
  int64_t n_tok = 0;
  int64_t n_cols = 0;
  ActLayout lay;

  const uint8_t* row(int64_t t) const { return data + static_cast<size_t>(t) * lay.stride; }
  const int8_t* qs(int64_t t) const { return reinterpret_cast<const int8_t*>(row(t)); }
  const float* d(int64_t t) const { return reinterpret_cast<const float*>(row(t) + lay.d_off); }
  const int16_t* sums(int64_t t) const {
    return reinterpret_cast<const int16_t*>(row(t) + lay.sum_off);
  }
  const float* f32(int64_t t) const { return reinterpret_cast<const float*>(row(t)); }
};

// Quantizes n_tok rows of n_cols floats into rows of `lay.stride` bytes at out (Q8_0 / Q8_K;
// F32 copies). The two implementations are bit-identical.
void quantize_rows_scalar(TensorType act_type, const float* x, int64_t n_tok, int64_t n_cols,
                          uint8_t* out, const ActLayout& lay);
void quantize_rows_avx2(TensorType act_type, const float* x, int64_t n_tok, int64_t n_cols,
                        uint8_t* out, const ActLayout& lay);

// y[t * y_stride + r] for every token t < x.n_tok and row r in [r0, r1). x.type must be
// activation_type(w.type). The AVX2 entry returns false (computing nothing) for a weight type
// it has no kernel for.
void rows_scalar(const MatrixView& w, const Acts& x, float* y, int64_t y_stride, int64_t r0,
                 int64_t r1);
bool rows_avx2(const MatrixView& w, const Acts& x, float* y, int64_t y_stride, int64_t r0,
               int64_t r1);
bool avx2_has_kernel(TensorType w);
// The packed kernels (Q8_0, Q4_0, Q4_K, Q6_K) on AVX-VNNI, bit-identical to rows_avx2's; false,
// computing nothing, for any other matrix.
bool rows_avxvnni(const MatrixView& w, const Acts& x, float* y, int64_t y_stride, int64_t r0,
                  int64_t r1);
// The same on AVX512-VNNI + VL (EVEX vpdpbusd on 256-bit vectors), for CPUs without AVX-VNNI.
bool rows_avx512vnni(const MatrixView& w, const Acts& x, float* y, int64_t y_stride, int64_t r0,
                     int64_t r1);

}  // namespace hearth::ops::mm
