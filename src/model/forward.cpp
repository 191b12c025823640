#include "model/forward.h"

#include <algorithm>
#include <numeric>

#include "util/error.h"

namespace hearth {

ops::KvLayout kv_layout_for(const HParams& hp, TensorType kv_type, int64_t block_tokens) {
  if (block_tokens <= 0 || block_tokens > 4096)
    fail("KV block size must be in 1..4096, got {}", block_tokens);
  if (!ops::kv_type_supported(kv_type))
    fail("KV type {} is not supported (F32, F16, Q8_0, Q4_0)", type_name(kv_type));
  if (hp.head_dim % traits(kv_type).block_elems != 0)
    fail("{} KV needs a head size that is a multiple of {} (this model: {})", type_name(kv_type),
         traits(kv_type).block_elems, hp.head_dim);
  ops::KvLayout l;
  l.type = kv_type;
  l.n_kv_head = hp.n_head_kv;
  l.head_dim = hp.head_dim;
  l.block_tokens = block_tokens;
  l.head_major = true;
  return l;
}

Forward::Forward(const Model& model, ForwardOptions options, ops::ThreadPool& pool)
    : opt_(options), fwd_(model, pool) {
  const HParams& hp = model.hparams();
  if (opt_.n_ctx <= 0) fail("context size must be positive, got {}", opt_.n_ctx);
  arena_.layout = kv_layout_for(hp, opt_.kv_type, opt_.kv_block_tokens);
  arena_.n_layer = hp.n_full_attention_layers();
  const int64_t n_blocks = (opt_.n_ctx + opt_.kv_block_tokens - 1) / opt_.kv_block_tokens;
  arena_.n_blocks = static_cast<int32_t>(n_blocks);
  // One context: the sliding-window layers keep every block too (simplest; the KV manager is
  // where they keep only their windows).
  arena_.window.layout = arena_.layout;
  arena_.window.n_layer = hp.n_window_layers();
  arena_.window.n_blocks = arena_.window.n_layer > 0 ? arena_.n_blocks : 0;
  const size_t main_bytes = arena_.block_stride() * static_cast<size_t>(n_blocks);
  memory_ = AnonymousMemory::lazy(
      main_bytes + arena_.window.block_stride() * static_cast<size_t>(arena_.window.n_blocks),
      "KV cache");
  arena_.base = memory_.data();
  arena_.window.base = memory_.data() + main_bytes;
  blocks_.resize(static_cast<size_t>(n_blocks));
  std::iota(blocks_.begin(), blocks_.end(), 0);
  arena_.state = StateArena::layout_for(hp);
  if (arena_.state.slot_floats > 0) {
    state_.assign(static_cast<size_t>(arena_.state.slot_floats), 0.0f);
    arena_.state.base = state_.data();
    arena_.state.n_slots = 1;
  }
}

void Forward::truncate(int64_t n) {
  if (n < 0 || n > n_past_) fail("cannot truncate a cache of {} positions to {}", n_past_, n);
  // A recurrent state cannot be rolled back: only forgetting everything is possible.
  if (!state_.empty() && n != n_past_) {
    if (n != 0)
      fail("cannot truncate a recurrent model's state from {} to {} positions (only to 0)", n_past_,
           n);
    std::fill(state_.begin(), state_.end(), 0.0f);
  }
  n_past_ = n;
}

std::vector<float> Forward::eval(std::span<const int32_t> tokens, bool all_logits) {
  const int64_t T = static_cast<int64_t>(tokens.size());
  if (T == 0) fail("eval: empty batch");
  if (n_past_ + T > opt_.n_ctx)
    fail("context is full: {} cached + {} new tokens exceed the context size {}", n_past_, T,
         opt_.n_ctx);
  const SeqBatch seq{
      tokens, n_past_, blocks_, all_logits ? Logits::All : Logits::Last, state_.empty() ? -1 : 0,
      blocks_};
  std::vector<float> logits = fwd_.forward(std::span(&seq, 1), arena_);
  n_past_ += T;
  return logits;
}

}  // namespace hearth
