// Log-probabilities as OpenAI reports them: log-softmax of the raw model logits (before logit
// bias, penalties, truncation or temperature), so they measure the model, not the sampler.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace hearth {

struct LogprobEntry {
  int32_t token = -1;
  float logprob = 0.0f;
};

// log(sum(exp(logits))), NaN counted as -infinity; -infinity when every logit is.
float logsumexp(std::span<const float> logits);

// The n best tokens (higher logit first, lower id on ties) with logit - lse, into `out`.
// Partial selection: O(V) comparisons plus O(n log n).
void top_logprobs(std::span<const float> logits, float lse, size_t n,
                  std::vector<LogprobEntry>& out);

}  // namespace hearth
