// Speculative decoding with a draft model (--spec draft, --model-draft): a second, smaller model
// with the same vocabulary proposes each decoding sequence's next k tokens (greedy), and the
// target verifies them as engine/speculation.h says.
//
// The draft keeps its own K/V in its own KV manager and prefix cache, in lock-step with each
// sequence: the tokens it has computed are always a prefix of the sequence's tokens (sync()
// cuts them back to what the target kept, so a rejected draft's K/V lies past that prefix and
// is never cached, in the draft's cache or the target's). Where the draft's cache lacks part of
// a sequence the target found cached (another turn, a restart: the draft has no disk tier), the
// draft computes it before proposing (catch-up, at most kCatchUp tokens a step, proposing
// nothing until it has caught up). A prompt's prefill chunks are computed by the draft in the
// step the target computes them (follow()), so decoding starts caught up. Models with recurrent
// layers cannot be drafts: their state cannot be rolled back past a rejected token.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "kv/kv_manager.h"
#include "model/batch_forward.h"
#include "tokenizer/tokenizer.h"

namespace hearth {

struct DraftAsk {
  int64_t id = 0;
  std::span<const int32_t> tokens;  // the sequence's tokens (its last one has no K/V yet)
  int64_t k = 0;                    // tokens wanted
};

class DraftModel {
 public:
  static constexpr int64_t kCatchUp = 256;

  // The draft's K/V is of `kv_type` (the target's: a model drafting for itself then proposes
  // exactly what it will choose); `kv_tokens`: the draft pool's room in tokens (as the
  // target's). Throws hearth::Error when
  // the draft cannot serve the target: another vocabulary (ids, pieces, BOS/EOS) or recurrent
  // layers.
  DraftModel(const Model& draft, const Model& target, const Tokenizer& target_tok,
             ops::ThreadPool& pool, TensorType kv_type, int64_t kv_tokens, int64_t block_tokens,
             bool prefix_cache);

  // While the sequences prefill: the draft computes their tokens too (each ask's `tokens`: what
  // the target will have computed after this step; k is not used), so that it has caught up
  // when they decode.
  void follow(std::span<const DraftAsk> asks);
  // Up to k greedy tokens for each ask (fewer, or none, when the draft pool is short or the
  // draft is still catching up), in the asks' order.
  std::vector<std::vector<int32_t>> propose(std::span<const DraftAsk> asks);
  // The sequence's tokens after verification: the draft's computed prefix is cut back to them.
  void sync(int64_t id, std::span<const int32_t> tokens);
  void release(int64_t id);  // caches what the draft computed for the sequence and frees it
  void drop(int64_t id);     // frees it uncached

 private:
  struct Seq {
    std::vector<int32_t> tokens;  // what the draft has K/V for (a prefix of the sequence's)
    bool attached = false;
  };
  struct Live;
  bool start(const DraftAsk& ask, bool follow, Live& live);
  void run(std::vector<Live>& live);

  const Model& model_;
  BatchForward fwd_;
  KvManager kv_;
  std::unordered_map<int64_t, Seq> seqs_;
  std::vector<float> logits_;
};

}  // namespace hearth
