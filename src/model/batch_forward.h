// The forward pass over a mixed batch: several sequences, each with new tokens at its own
// positions, its K/V in arena blocks listed by a block table and (models with recurrent layers)
// its state in a slot. All tokens of the batch share one pass over the weights; attention runs
// per sequence over its blocks, recurrences per sequence over its state. This file orchestrates
// the layers; each token mixer and the MoE block live in their own files. A sequence's logits
// are bit-identical whether it runs alone or with others, and however its prompt is chunked.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/attention_layer.h"
#include "model/batch_step.h"
#include "model/delta_net_layer.h"
#include "model/kv_arena.h"
#include "model/moe_ffn.h"
#include "model/short_conv_layer.h"
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
  // Models with sliding-window layers: their blocks (kv.window), indexed like `blocks`; -1 where
  // every position of the block is before the window of the batch's first token (slid out).
  std::span<const int32_t> window_blocks;
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
  void validate(std::span<const SeqBatch> batch, const KvArena& kv) const;
  void begin_step(std::span<const SeqBatch> batch, const KvArena& kv);
  void mixer(int64_t layer, ops::ThreadPool& pool);
  void dense_ffn(int64_t layer);
  void output_logits(std::vector<float>& logits);

  const Model& model_;
  ops::ThreadPool& pool_;
  AttentionMixer attention_;
  DeltaNetMixer delta_net_;
  ShortConvMixer short_conv_;
  MoeFfn moe_;
  BatchStep step_;
  ops::QuantizedActivations qx_;
  std::vector<float> x_, h_, o_, g_, u_;  // per-step scratch, kept warm
};

}  // namespace hearth
