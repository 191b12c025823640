// A weight matrix as stored in the file: n_rows rows of n_cols elements in `type` blocks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "quant/types.h"

namespace hearth {

struct MatrixView {
  std::string name;
  TensorType type = TensorType::F32;
  const uint8_t* data = nullptr;
  int64_t n_cols = 0;  // ne[0]: input width, contiguous
  int64_t n_rows = 0;  // ne[1]: outputs
  size_t row_stride = 0;
  // Optional faster copy for the AVX2-family kernels (the types of ops/packed_rows.h), owned by
  // whoever set it; `data` stays the reference layout every other reader uses.
  const uint8_t* packed = nullptr;

  const uint8_t* row(int64_t r) const { return data + static_cast<size_t>(r) * row_stride; }
  // Bytes of the matrix as stored (what a pass over all its rows reads).
  size_t bytes() const { return row_stride * static_cast<size_t>(n_rows); }
};

}  // namespace hearth
