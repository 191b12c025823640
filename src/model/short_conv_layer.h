// LFM2's gated short convolution on the fast path: [B | C | X] = in_proj(h) over all the step's
// tokens, then per sequence and token y = conv(B ⊙ X) over the last l_cache inputs (history from
// the sequence's state slot, updated in place), out = out_proj(C ⊙ y). The conv runs token by
// token with a fixed order, so outputs and state do not depend on chunking or batching.
#pragma once

#include <cstdint>
#include <vector>

#include "model/batch_step.h"
#include "model/weights.h"
#include "ops/matmul.h"
#include "ops/thread_pool.h"

namespace hearth {

class ShortConvMixer {
 public:
  explicit ShortConvMixer(const Model& model);

  // out (n_tok rows of n_embd) for the normed input h (rows also quantized in qh).
  void forward(const BatchStep& step, int64_t layer, const float* h,
               const ops::QuantizedActivations& qh, float* out, ops::ThreadPool& pool);

 private:
  void conv_block(const BatchStep& step, size_t seq, int64_t layer, int64_t ch0, int64_t nch);

  const Model& model_;
  std::vector<std::vector<float>> taps_;  // per layer: tap-major (l_cache rows of n_embd)
  std::vector<float> bcx_, u_, y_;        // per-step scratch, kept warm
  ops::QuantizedActivations qy_;
};

}  // namespace hearth
