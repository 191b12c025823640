// The Gated DeltaNet token mixer (qwen35 / qwen35moe linear-attention layers) on the fast path.
// Projections run over all the step's tokens at once; the short conv and the delta-rule
// recurrence run token by token per sequence, in a fixed order (no chunked or parallel-scan
// form), so a sequence's outputs and state are bit-identical however its tokens were chunked or
// batched. The state lives in the sequence's slot (model/state_arena.h) and is updated in place.
#pragma once

#include <cstdint>
#include <vector>

#include "model/batch_step.h"
#include "model/weights.h"
#include "ops/matmul.h"
#include "ops/thread_pool.h"

namespace hearth {

class DeltaNetMixer {
 public:
  explicit DeltaNetMixer(const Model& model);

  // out (n_tok rows of n_embd) = the layer's mixer output for the normed input h, whose rows are
  // also quantized in qh (any activation type). Advances each sequence's state of `layer`.
  void forward(const BatchStep& step, int64_t layer, const float* h,
               const ops::QuantizedActivations& qh, float* out, ops::ThreadPool& pool);

 private:
  void conv_block(const BatchStep& step, size_t seq, int64_t layer, int64_t block);
  void recur_head(const BatchStep& step, size_t seq, int64_t layer, int64_t head);

  const Model& model_;
  std::vector<std::vector<float>> taps_;  // per layer: conv taps, tap-major (K rows of channels)
  std::vector<float> m_, c_, z_, beta_, alpha_, y_;  // per-step scratch, kept warm
  ops::QuantizedActivations qy_;
};

}  // namespace hearth
