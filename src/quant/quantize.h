// Reference quantization: float32 rows -> packed rows (used to write synthetic models).
#pragma once

#include <cstddef>
#include <cstdint>

#include "quant/types.h"

namespace hearth {

// True for F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, Q8_K.
bool can_quantize(TensorType t);

// Encodes n floats (a multiple of the type's block size) into dst, which must hold
// row_bytes(t, n) bytes (any alignment). Returns the bytes written. Deterministic.
// K-quants search sub-block scales/mins by weighted least squares over a small grid of
// candidate scales (cost independent of n per element). Throws hearth::Error for unsupported
// types or a bad n.
size_t quantize_row(TensorType t, const float* src, void* dst, int64_t n);

}  // namespace hearth
