// Reference dequantization: packed rows of any supported type -> float32.
#pragma once

#include <cstdint>

#include "quant/types.h"

namespace hearth {

// True for F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, Q8_K.
bool can_dequantize(TensorType t);

// Decodes n elements (a multiple of the type's block size) from `src` (row_bytes(t, n) bytes,
// any alignment) into dst. Bit-exact with the plain per-block formulas (e.g. Q4_K:
// (d*sc)*q - (dmin*m) in float32). Throws hearth::Error for unsupported types or a bad n.
void dequantize_row(TensorType t, const void* src, float* dst, int64_t n);

// sum_i dequant(row)[i] * x[i], dequantizing one block at a time and accumulating in float
// in element order. The simple reference matvec building block; same preconditions.
float dot_row(TensorType t, const void* row, const float* x, int64_t n);

}  // namespace hearth
