// One sequence on the fast path, with its own KV memory: the convenience `hearth run`, the
// benchmarks and the tests use. It is BatchForward with a private arena and a trivial block
// table (block i holds positions [i*B, (i+1)*B)).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/batch_forward.h"
#include "model/kv_arena.h"
#include "model/weights.h"
#include "util/anonymous_memory.h"

namespace hearth {

struct ForwardOptions {
  int64_t n_ctx = 4096;
  TensorType kv_type = TensorType::F16;  // F32, F16, Q8_0 or Q4_0
  int64_t kv_block_tokens = 32;
};

// Checks the options against the model and returns the KV layout they give.
ops::KvLayout kv_layout_for(const HParams& hp, TensorType kv_type, int64_t block_tokens);

class Forward {
 public:
  Forward(const Model& model, ForwardOptions options, ops::ThreadPool& pool);

  // Runs `tokens` at positions n_past().. and returns the last token's logits, or every
  // token's when all_logits is set.
  std::vector<float> eval(std::span<const int32_t> tokens, bool all_logits = false);

  int64_t n_past() const { return n_past_; }
  int64_t n_ctx() const { return opt_.n_ctx; }
  // Forgets positions >= n. A model with recurrent layers can only go back to 0.
  void truncate(int64_t n);
  const Model& model() const { return fwd_.model(); }
  size_t kv_bytes_per_token() const {
    return arena_.bytes_per_token() + arena_.window.bytes_per_token();
  }

 private:
  ForwardOptions opt_;
  BatchForward fwd_;
  AnonymousMemory memory_;  // pages are touched only as the context fills
  KvArena arena_;
  std::vector<int32_t> blocks_;
  std::vector<float> state_;  // the recurrent state slot (models with recurrent layers)
  int64_t n_past_ = 0;
};

}  // namespace hearth
