// What a prefill chunk costs a step, in "token-equivalents": tokens at depth 0. A token's
// matmuls cost the same at any depth, but its attention grows with the positions before it, so
// a chunk deep in a long prompt takes longer than one at its start. The scheduler fills each step
// by this cost rather than by token count, so a step stays about as long however deep the
// prompts in it are: that bounds how long a new request waits for the step in flight, and how
// long a decoding stream waits between tokens, during a long prefill.
#pragma once

#include <cstdint>

#include "model/hparams.h"

namespace hearth {

class StepCost {
 public:
  explicit StepCost(const HParams& hp);

  // The depth at which one token's attention takes as long as its matmuls.
  double depth_equivalent() const { return depth_; }

  // Tokens [depth, depth + n): n · (1 + (depth + n/2) / D).
  double chunk(int64_t depth, int64_t n) const;

  // The most tokens, at most max_n, that fit `allowance` from `depth`; at least 1 (every
  // scheduled chunk advances), 0 only when max_n is 0.
  int64_t fit(int64_t depth, int64_t max_n, double allowance) const;

 private:
  double depth_;
};

}  // namespace hearth
