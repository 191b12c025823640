// One sequence's sampler: the configured chain over a logits row, with the sequence's state
// (penalty counts, DRY index, Mirostat mu, random stream).
//
// Use: build one per sequence; set_history(prompt) once; then per step
//   SampleResult r = sampler.sample(logits_row);  sampler.accept(r.token);
// After a cache trim or speculative rollback, set_history(the tokens now kept) — it rebuilds
// only when they are not an extension of what the sampler has seen.
//
// The chain: logit_bias, then `samplers` in order, then a draw from softmax of what is left.
// mirostat 1/2 replaces the list with temperature + Mirostat (as llama.cpp). temperature <= 0
// is greedy: the best token after bias, penalties, DRY and the deterministic stages, with no
// random draw (XTC is skipped; typical_p can still exclude the best token).
//
// Determinism: the random stream is this sampler's own (seeded xoshiro256**), and every stage
// orders candidates by a total order, so a seed, parameters and logits give the same tokens
// on every run, independent of other sequences. (std::exp / std::log come from the platform's
// libm; a libm that rounds differently in the last bit could change a choice in a near-tie.)
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "sampling/candidates.h"
#include "sampling/dry_state.h"
#include "sampling/logprobs.h"
#include "sampling/params.h"
#include "sampling/penalty_state.h"
#include "sampling/rng.h"
#include "sampling/vocab_access.h"

namespace hearth {

struct SampleResult {
  int32_t token = -1;
  // When n_probs > 0: OpenAI semantics, log-softmax of the raw model logits (before bias,
  // penalties, truncation and temperature): logprob = logit[token] - logsumexp(logits).
  float logprob = 0.0f;
  std::vector<LogprobEntry> top_logprobs;  // the n_probs best by raw logit, best first
};

class Sampler {
 public:
  // Validates `params` (hearth::Error naming the parameter) and the logit_bias ids against
  // vocab.n_vocab. `vocab` is copied (its callbacks must stay valid for the sampler's life).
  Sampler(const SamplerParams& params, const VocabAccess& vocab);

  // Chooses the next token from one row of n_vocab logits (not modified; scratch buffers are
  // reused across calls, and the default chain without n_probs allocates nothing).
  SampleResult sample(std::span<const float> logits);
  // Records a token appended to the sequence (the sampled one, or any other).
  void accept(int32_t token);
  // The sequence's tokens (prompt + generated); appends when it extends the known history,
  // else rebuilds the state from scratch.
  void set_history(std::span<const int32_t> tokens);

  const SamplerParams& params() const { return p_; }
  uint64_t seed() const { return seed_; }  // the one drawn when params.seed was unset
  std::span<const int32_t> history() const { return history_; }
  int32_t n_vocab() const { return n_vocab_; }

  // Writes logits + bias + penalties + DRY (the stages that rewrite logits, in the same
  // floating-point steps as sample()) into `out` (size n_vocab); for tests and diagnostics.
  void apply_logit_rewrites(std::span<const float> logits, std::span<float> out);

 private:
  void push_state(int32_t token);
  bool is_breaker(int32_t token);
  void apply_penalties(Candidates& c) const;
  void apply_dry(Candidates& c);

  SamplerParams p_;
  VocabAccess vocab_;
  int32_t n_vocab_;
  uint64_t seed_;
  SamplerRng rng_;
  float mu_;
  float dry_base_;
  std::vector<LogitBias> bias_;  // one entry per token, summed, sorted by token
  std::vector<int32_t> history_;
  std::unique_ptr<PenaltyState> penalties_;  // null when the penalties stage is inert
  std::unique_ptr<DryState> dry_;            // null when DRY is inert
  std::unordered_map<int32_t, bool> breaker_cache_;
  Candidates cand_;
};

}  // namespace hearth
