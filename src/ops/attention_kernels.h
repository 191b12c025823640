// Internal: the work unit of the fused attention kernel and its per-ISA implementations
// (driver and dispatch in attention.cpp, AVX2 kernel in avx2/attention_avx2.cpp).
//
// Reduction order (what makes the result batch invariant): for one (query row at position p,
// query head), KV positions 0..p are visited in tiles of kAttnTile positions aligned to
// absolute positions (tile i covers [i*T, (i+1)*T)). Per tile: scores s_j = dot(q, k_j) * scale
// (each dot a fixed sequence over head_dim: in the AVX2 kernel, 8 in-order FMA chains over the
// columns c = l mod 8 combined in a fixed tree, whether computed per key with horizontal sums or
// per 8 keys as a GEMM), tile max, m' = max(m, tile max), alpha = e^(m - m'),
// p_j = e^(s_j - m'), l = l*alpha + sum_j p_j (sum over T lanes, masked lanes exactly 0),
// o = o*alpha, then o += p_j * v_j for valid j in increasing order; finally out = o * (1/l).
// Every step depends only on the query, its position and K/V[0..p] - never on which other
// queries or heads share the task, the task split, or the thread that runs it.
// With a sliding window W the row's tiles start at the one holding its first position
// lo = max(0, p - W + 1); lanes below lo are masked like those past p (p_j exactly 0), and a
// row skips the tiles wholly before lo, so it still sees the same tiles and masks in any task.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "ops/attention.h"

namespace hearth::ops::detail {

inline constexpr int64_t kAttnTile = 32;  // KV positions per tile (multiple of 8)
// Query rows per task (a performance knob only): the more rows, the more query vectors share
// each decoded K/V tile. 24 measured 3-7% faster than 12 for a 90-token chunk over 1100 cached
// positions (Qwen3-0.6B shape, 2 threads); 48 the same as 24.
inline constexpr int64_t kAttnQueryRows = 24;

// One task: n_rows consecutive query rows (positions pos_first, pos_first+1, ...) times the
// `group` query heads that share KV head kv_head. Query vector m = r*group + g lives at
// q + r*row_stride + g*head_dim, its output at out + r*row_stride + g*head_dim.
struct AttnTask {
  const KvSeqView* kv = nullptr;
  size_t head_bytes = 0, token_bytes = 0;
  bool head_major = false;
  int64_t head_dim = 0;
  int64_t kv_head = 0;
  int64_t group = 1;
  int64_t n_rows = 1;
  int64_t pos_first = 0;
  const float* q = nullptr;
  float* out = nullptr;
  int64_t row_stride = 0;
  float scale = 1.0f;
  int64_t window = 0;      // AttentionArgs::window
  bool key_pairs = false;  // attention_key_pairs(): decode scores two keys per 512-bit vector
  // The task this thread most likely runs next (attention_batch's split), or null: the direct
  // path prefetches its first tile during this task's last one.
  const AttnTask* next = nullptr;

  // First position query row r sees, and the first tile a task of these rows visits.
  int64_t first_pos(int64_t r) const {
    return window > 0 ? std::max<int64_t>(0, pos_first + r - window + 1) : 0;
  }
  int64_t first_tile() const { return first_pos(0) / kAttnTile * kAttnTile; }
  // Positions of the tile at j0 that some row sees (0 past the task's last position).
  int64_t tile_len(int64_t j0) const {
    return std::clamp<int64_t>(pos_first + n_rows - j0, 0, kAttnTile);
  }
  // Rows [0, end_row(j0)) see some position of the tile at j0 (the others start after it).
  int64_t end_row(int64_t j0) const {
    return window > 0 ? std::clamp<int64_t>(j0 + kAttnTile + window - 1 - pos_first, 0, n_rows)
                      : n_rows;
  }
};

// Tasks with few query vectors take the direct path (kernels read the encoded rows in place);
// the others decode each K/V tile once for all their rows.
inline constexpr int64_t kAttnDirectMaxVectors = 6;
inline bool direct_task(const AttnTask& t) {
  return t.n_rows * t.group <= kAttnDirectMaxVectors;
}

// Rows before a task's first visible position (first_pos(0): the window's start for its first
// row) are read from this zero row, never from their blocks: tiles start at 32-aligned
// positions, so the first tile of a window may begin before it, and the KV manager frees the
// blocks that slid out of every window (their pointers may be null or reused). Those lanes are
// masked (p_j exactly 0), and zeros keep them finite (0 * 0, never 0 * NaN), so the results are
// those of reading the real rows.
inline constexpr size_t kZeroRowBytes = 16384;
alignas(64) inline constexpr uint8_t kZeroRow[kZeroRowBytes] = {};

// kv_row_offset (ops/attention.h) of the task's head at a block slot, from its cached sizes.
inline size_t task_row_offset(const AttnTask& t, int64_t slot) {
  return t.head_major
             ? static_cast<size_t>(t.kv_head * t.kv->layout.block_tokens + slot) * t.head_bytes
             : static_cast<size_t>(slot) * t.token_bytes +
                   static_cast<size_t>(t.kv_head) * t.head_bytes;
}

// Encoded row of the task's KV head at absolute position `pos` in one of the view's block lists.
inline const uint8_t* kv_row(const AttnTask& t, const uint8_t* const* blocks, int64_t pos) {
  if (pos < t.first_pos(0)) return kZeroRow;
  const int64_t bt = t.kv->layout.block_tokens;
  return blocks[pos / bt] + task_row_offset(t, pos % bt);
}

// The online-softmax state of a task's M query vectors, laid out at `p` in scratch memory:
// o [M][hd] (unnormalised outputs), then mx, l and alpha [M]; floats(M, hd) of them. Made in
// the state before the first tile: o = 0, mx = -inf, l = 0.
struct SoftmaxState {
  float *o, *mx, *l, *alpha;
  static size_t floats(size_t M, size_t hd) { return M * (hd + 3); }
  SoftmaxState(float* p, size_t M, size_t hd) : o(p), mx(p + M * hd), l(mx + M), alpha(l + M) {
    std::fill(o, mx, 0.0f);
    std::fill(mx, l, -std::numeric_limits<float>::infinity());
    std::fill(l, alpha, 0.0f);
  }
};

void attention_task_scalar(const AttnTask& t);

namespace avx2 {
// Requires head_dim % 8 == 0.
void attention_task(const AttnTask& t);
}  // namespace avx2

namespace avx512 {
// The same, bit-identical, with the prefill GEMMs on 512-bit vectors (AVX-512 F/BW/VL CPUs).
void attention_task(const AttnTask& t);
}  // namespace avx512

}  // namespace hearth::ops::detail
