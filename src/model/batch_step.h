// What each layer of one BatchForward step sees: the batch, the memory it addresses, and where
// each sequence's tokens sit among the step's token rows. The layer files (attention, DeltaNet,
// short conv, MoE) take it so that batch_forward.cpp stays the orchestrator.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "model/kv_arena.h"
#include "ops/thread_pool.h"

namespace hearth {

struct SeqBatch;

struct BatchStep {
  std::span<const SeqBatch> batch;
  const KvArena* kv = nullptr;
  int64_t n_tok = 0;              // token rows of the step, sequence after sequence
  std::vector<int64_t> seq_row0;  // first row of each sequence (batch.size() + 1 entries)
  std::vector<int64_t> tok_pos;   // each row's position
  std::vector<int32_t> tok_seq;   // and the sequence it belongs to
  int64_t seq_rows(size_t s) const { return seq_row0[s + 1] - seq_row0[s]; }
};

// Runs fn(t0, t1) over token ranges covering [0, T), on the pool when there are enough tokens to
// pay for a parallel region. The per-token steps are row-wise, so the split never changes a
// result.
template <typename Fn>
void over_tokens(ops::ThreadPool& pool, int64_t T, Fn&& fn) {
  constexpr int64_t kPerTask = 8;
  if (pool.size() == 1 || T < 2 * kPerTask) {
    fn(int64_t{0}, T);
    return;
  }
  pool.parallel_for((T + kPerTask - 1) / kPerTask,
                    [&](int64_t i, int) { fn(i * kPerTask, std::min(T, (i + 1) * kPerTask)); });
}

}  // namespace hearth
