// Speculative decoding's policy: what to draft for a decoding sequence and how many tokens.
//
// A sequence that decodes runs its last sampled token through the model with k drafted tokens
// after it, as one row of the step's batch (Logits::All). The output stage then samples row by
// row, exactly as it would have one step at a time, and keeps going while each sampled token
// equals the draft that followed: row j's logits were computed after draft j-1, which is then
// the token actually chosen. The first sampled token that differs ends the row (its K/V, and
// the drafts after it, are never counted as computed, so they reach no cache). Since the forward
// pass is batch- and chunk-invariant, every row's logits are bit-identical to a plain decode's,
// and the sampler consumes its random numbers in the same order: output is identical to
// decoding without drafts, greedy and sampled alike (a draft that is a single token, not a
// distribution, makes "sample, then accept if equal" the exact speculative-sampling rule).
//
// Drafts come from the sequence itself (prompt lookup): the longest recent n-gram ending the
// sequence that occurred before, and the tokens that followed it there. The draft length adapts
// to what was accepted, and drafting pauses (exponentially longer) after misses, so text that
// does not repeat costs next to nothing.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

namespace hearth {

enum class SpecMode { Off, Ngram, Draft };  // Draft: engine/draft_model.h
const char* spec_mode_name(SpecMode m);

struct SpecOptions {
  SpecMode mode = SpecMode::Ngram;
  int draft_max = 16;  // the most tokens drafted at once (llama-server's --draft-max)
  int draft_min = 0;   // fewer found: no draft (llama-server's --draft-min)
  // Prompt lookup: suffix n-grams tried, longest first.
  int ngram_max = 6;
  int ngram_min = 2;
};

// The tokens that followed the most recent earlier occurrence of the longest n-gram (n in
// [ngram_min, ngram_max]) that ends `tokens`; at most `max_len`, empty when none occurred.
std::vector<int32_t> ngram_lookup(std::span<const int32_t> tokens, int ngram_min, int ngram_max,
                                  int64_t max_len);

// One sequence's draft length: doubles after a fully accepted draft, falls to one past what was
// accepted otherwise; after two drafts in a row with nothing accepted, drafting pauses for a
// number of steps that doubles with each further miss (up to 64) and resets on a hit.
class DraftLength {
 public:
  explicit DraftLength(int max_len) : max_(max_len), len_(std::min(4, max_len)) {}
  // How many tokens to draft this step (0: none).
  int64_t wanted();
  void verified(int64_t drafted, int64_t accepted);

 private:
  int max_;
  int len_;
  int misses_ = 0;  // drafts in a row with nothing accepted
  int pause_ = 0;   // steps left without drafting
  int backoff_ = 1;
};

}  // namespace hearth
