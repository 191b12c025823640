#include "ops/packed_q8_0.h"

#include <cstring>

#include "quant/blocks.h"
#include "util/error.h"

namespace hearth::ops {

size_t packed_q8_0_bytes(int64_t n_rows, int64_t n_cols) {
  return static_cast<size_t>((n_rows + 7) / 8) * static_cast<size_t>(n_cols / 32) * kPackedQ8Bytes;
}

void pack_q8_0(const MatrixView& w, uint8_t* dst) {
  if (w.type != TensorType::Q8_0 || w.n_cols % 32 != 0)
    fail("pack_q8_0: {} is not a Q8_0 matrix with whole blocks", w.name);
  const int64_t nb = w.n_cols / 32, n_groups = (w.n_rows + 7) / 8;
  static_assert(sizeof(BlockQ8_0) == 34);
  for (int64_t g = 0; g < n_groups; ++g) {
    const BlockQ8_0* rows[8];
    for (int r = 0; r < 8; ++r)
      rows[r] =
          8 * g + r < w.n_rows ? reinterpret_cast<const BlockQ8_0*>(w.row(8 * g + r)) : nullptr;
    for (int64_t b = 0; b < nb; ++b) {
      uint8_t* out = dst + static_cast<size_t>(g * nb + b) * kPackedQ8Bytes;
      for (int r = 0; r < 8; ++r) {
        if (rows[r] == nullptr) {
          std::memset(out + 2 * r, 0, 2);
          for (int k = 0; k < 8; ++k) std::memset(out + 16 + 32 * k + 4 * r, 0, 4);
          continue;
        }
        const BlockQ8_0& blk = rows[r][b];
        std::memcpy(out + 2 * r, &blk.d, 2);
        for (int k = 0; k < 8; ++k) std::memcpy(out + 16 + 32 * k + 4 * r, blk.qs + 4 * k, 4);
      }
    }
  }
}

}  // namespace hearth::ops
