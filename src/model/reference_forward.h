// The reference forward pass: straightforward f32 math over a batch of tokens with a contiguous
// f32 KV cache and the recurrent state of DeltaNet / short-conv layers kept here, in a private
// layout. It is the oracle every optimised path is tested against — keep it plain.
// The mixers (attention, Gated DeltaNet, short conv) and the FFNs (dense, MoE) are in
// reference_layers.cpp; the layout of one layer follows ../shared/golden/synthetic-arch/README.md.
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
  // Forgets positions >= n. A recurrent state cannot be rolled back: on a model with recurrent
  // layers only n == 0 (reset) and n == n_past() are allowed; anything else is an Error.
  void truncate(int64_t n);
  const Model& model() const { return model_; }

 private:
  // Each writes its sublayer's output for the T tokens of `h` ([T][n_embd]) to `out`.
  void attention_layer(int64_t layer, const float* h, int64_t T, float* out);
  void deltanet_layer(int64_t layer, const float* h, int64_t T, float* out);
  void shortconv_layer(int64_t layer, const float* h, int64_t T, float* out);
  void dense_ffn(int64_t layer, const float* h, int64_t T, float* out) const;
  void moe_ffn(int64_t layer, const float* h, int64_t T, float* out) const;
  // Softmax attention of already roped queries q ([T][n_head][head_dim]) over the cached K/V
  // of `layer` (positions 0 .. n_past_+t for token t, the last n_swa of them when windowed).
  void attend(int64_t layer, const float* q, int64_t T, float* out) const;
  void reset_recurrent_state();

  const Model& model_;
  int64_t n_ctx_;
  int64_t n_past_ = 0;
  ref::RopeConfig rope_, rope_swa_;
  // Per model layer (empty for layers without that kind of memory):
  std::vector<std::vector<float>> k_cache_, v_cache_;  // [n_ctx][kv_dim]
  std::vector<std::vector<float>> conv_state_;         // the last K-1 conv inputs, oldest first
  std::vector<std::vector<float>> delta_state_;        // [nv][dk][dv]: key-major per value head
};

}  // namespace hearth
