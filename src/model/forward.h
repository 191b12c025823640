// The fast forward pass: the same math as ReferenceForward, on the dispatched SIMD kernels
// (ops/), with activations quantized on the fly for quantized weights and K/V stored encoded
// (F16 by default) in fixed-size blocks read directly by the fused attention kernel.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "model/weights.h"
#include "ops/attention.h"
#include "ops/matmul.h"
#include "ops/reference.h"
#include "ops/thread_pool.h"

namespace hearth {

struct ForwardOptions {
  int64_t n_ctx = 4096;
  TensorType kv_type = TensorType::F16;  // F32, F16 or Q8_0
  int64_t kv_block_tokens = 32;
};

class Forward {
 public:
  Forward(const Model& model, ForwardOptions options, ops::ThreadPool& pool);

  // As ReferenceForward::eval: runs `tokens` at positions n_past().. and returns the last
  // token's logits, or every token's when all_logits is set.
  std::vector<float> eval(std::span<const int32_t> tokens, bool all_logits = false);

  int64_t n_past() const { return n_past_; }
  int64_t n_ctx() const { return opt_.n_ctx; }
  void truncate(int64_t n);
  const Model& model() const { return model_; }
  // Bytes of K+V per token over all layers, as stored.
  size_t kv_bytes_per_token() const;

 private:
  struct LayerKv {
    std::vector<std::unique_ptr<uint8_t[]>> k_blocks, v_blocks;
    std::vector<const uint8_t*> k_ptrs, v_ptrs;
  };
  void ensure_capacity(int64_t n_tokens);
  const float* rope_table(int64_t pos);  // cos then sin, n_rot/2 each
  uint8_t* kv_slot(std::vector<std::unique_ptr<uint8_t[]>>& blocks, int64_t pos) const;
  void matmul(const MatrixView& w, const float* x, int64_t n_tok, float* y);

  const Model& model_;
  ForwardOptions opt_;
  ops::ThreadPool& pool_;
  ops::KvLayout kv_layout_;
  ref::RopeConfig rope_;
  std::vector<float> rope_cache_;  // per position: cos[n_rot/2], sin[n_rot/2]
  int64_t n_past_ = 0;
  std::vector<LayerKv> kv_;
  ops::QuantizedActivations qx_;
};

}  // namespace hearth
