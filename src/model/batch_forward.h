// The forward pass over a mixed batch: several sequences, each with new tokens at its own
// positions and its K/V in arena blocks listed by a block table. All tokens of the batch share
// one pass over the weights; attention runs per sequence over its blocks. A sequence's logits
// are bit-identical whether it runs alone or with others, and however its prompt is chunked.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/kv_arena.h"
#include "model/weights.h"
#include "ops/attention.h"
#include "ops/matmul.h"
#include "ops/reference.h"
#include "ops/thread_pool.h"

namespace hearth {

enum class Logits { None, Last, All };

struct SeqBatch {
  std::span<const int32_t> tokens;  // new tokens, at positions pos0, pos0+1, ...
  int64_t pos0 = 0;                 // tokens before pos0 already have K/V in the blocks
  std::span<const int32_t> blocks;  // block ids covering positions [0, pos0 + tokens.size())
  Logits logits = Logits::Last;
  // Models with recurrent layers: the state slot (kv.state) holding the state after tokens
  // [0, pos0), updated in place to the state after the batch's tokens. -1 otherwise.
  int32_t state_slot = -1;
};

class BatchForward {
 public:
  BatchForward(const Model& model, ops::ThreadPool& pool);

  // Runs the batch, writing each new token's K/V into its block. Returns the requested logits,
  // sequence by sequence (All: one row per token; Last: one row; None: nothing), n_vocab each.
  // Malformed input (bad ids, blocks that do not cover the positions) is an Error and changes
  // nothing.
  std::vector<float> forward(std::span<const SeqBatch> batch, const KvArena& kv);
  // The same into `logits`, resized to fit: a caller that keeps the vector across steps
  // allocates (and page-faults) nothing per step (4 rows of a 152k vocabulary are 2.4 MB).
  void forward(std::span<const SeqBatch> batch, const KvArena& kv, std::vector<float>& logits);

  const Model& model() const { return model_; }
  ops::ThreadPool& pool() { return pool_; }

 private:
  const float* rope_table(int64_t pos);  // cos then sin, n_rot/2 each

  const Model& model_;
  ops::ThreadPool& pool_;
  ref::RopeConfig rope_;
  std::vector<float> rope_cache_;
  ops::QuantizedActivations qx_;
  std::vector<float> x_, h_, q_, k_, v_, att_, o_, g_, u_;  // per-step scratch, kept warm
  std::vector<int64_t> tok_pos_;                            // each token's position
  std::vector<int32_t> tok_block_;                          // and the KV block it goes to
  std::vector<const uint8_t*> k_ptrs_, v_ptrs_;  // every sequence's block pointers, back to back
  std::vector<ops::KvSeqView> views_;
  std::vector<ops::AttentionArgs> args_;
};

}  // namespace hearth
