// Shared helpers for the KV tests: a small F16 geometry and runs of distinct token ids.
#pragma once

#include <numeric>
#include <vector>

#include "kv/kv_manager.h"

namespace hearth::test {

// F16 K/V of 2 heads of 32, head-major, in blocks of `block_tokens`, for `n_layer` layers.
inline KvGeometry small_f16_geometry(int64_t block_tokens, int64_t n_layer) {
  KvGeometry g;
  g.layout.type = TensorType::F16;
  g.layout.n_kv_head = 2;
  g.layout.head_dim = 32;
  g.layout.block_tokens = block_tokens;
  g.layout.head_major = true;
  g.n_layer = n_layer;
  return g;
}

// n consecutive token ids starting at `from`.
inline std::vector<int32_t> iota_tokens(int n, int32_t from = 100) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), from);
  return t;
}

}  // namespace hearth::test
