// The reference forward pass: straightforward f32 math over a batch of tokens with a contiguous
// f32 KV cache. It is the oracle every optimised path is tested against — keep it plain.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/weights.h"
#include "ops/reference.h"

namespace hearth {

class ReferenceForward {
 public:
  ReferenceForward(const Model& model, int64_t n_ctx);

  // Runs `tokens` at positions n_past() .. n_past()+T-1 and appends them to the cache.
  // Returns the logits of the last token (n_vocab floats), or of every token (T x n_vocab)
  // when all_logits is set. Token ids out of range or a full context are Errors.
  std::vector<float> eval(std::span<const int32_t> tokens, bool all_logits = false);

  int64_t n_past() const { return n_past_; }
  int64_t n_ctx() const { return n_ctx_; }
  void truncate(int64_t n);  // forget positions >= n
  const Model& model() const { return model_; }

 private:
  void attention(int64_t layer, const float* q, int64_t n_tok, float* out) const;

  const Model& model_;
  int64_t n_ctx_;
  int64_t n_past_ = 0;
  ref::RopeConfig rope_;
  std::vector<std::vector<float>> k_cache_, v_cache_;  // per layer: [n_ctx][kv_dim]
};

}  // namespace hearth
