// The attention token mixer on the fast path: Q/K/V projections over all the step's tokens, per
// token bias, q/k norm, RoPE (the layer's own table: gemma3's sliding-window layers have their
// own base) and the K/V store into the sequence's blocks, then one attention call over every
// sequence (a window on sliding-window layers), qwen35's per-head output gate, and the output
// projection.
#pragma once

#include <cstdint>
#include <vector>

#include "model/batch_step.h"
#include "model/weights.h"
#include "ops/attention.h"
#include "ops/matmul.h"
#include "ops/reference.h"
#include "ops/thread_pool.h"

namespace hearth {

// cos then sin (n_rot/2 each) per position, grown on demand and kept.
class RopeTable {
 public:
  explicit RopeTable(const ref::RopeConfig& c) : cfg_(c) {}
  void fill_to(int64_t pos);  // before threads read it
  const float* at(int64_t pos) const { return data_.data() + pos * cfg_.n_rot; }

 private:
  ref::RopeConfig cfg_;
  std::vector<float> data_;
};

class AttentionMixer {
 public:
  explicit AttentionMixer(const Model& model);

  // out (n_tok rows of n_embd) for the normed input h (rows also quantized in qh); writes each
  // token's K/V into its block of KV layer hp.kv_layer(layer).
  void forward(const BatchStep& step, int64_t layer, const float* h,
               const ops::QuantizedActivations& qh, float* out, ops::ThreadPool& pool);

 private:
  void prepare_token(const BatchStep& step, int64_t layer, int64_t t);
  void attend(const BatchStep& step, int64_t layer, ops::ThreadPool& pool);

  const Model& model_;
  RopeTable rope_, rope_swa_;
  std::vector<float> qg_, q_, gate_, k_, v_, att_;  // per-step scratch, kept warm
  std::vector<const uint8_t*> k_ptrs_, v_ptrs_;     // every sequence's block pointers
  std::vector<ops::KvSeqView> views_;
  std::vector<ops::AttentionArgs> args_;
};

}  // namespace hearth
