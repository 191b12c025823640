#include "sampling/logprobs.h"

#include <algorithm>
#include <cmath>

#include "ops/elementwise.h"
#include "sampling/candidates.h"

namespace hearth {
namespace {

float logprob_of(float logit, float lse) {
  return logit == -INFINITY || lse == -INFINITY ? -INFINITY : logit - lse;
}

}  // namespace

float logsumexp(std::span<const float> logits) {
  if (logits.empty()) return -INFINITY;
  const auto n = static_cast<int64_t>(logits.size());
  const float mx = logit_key(logits[static_cast<size_t>(ops::first_max_index(logits.data(), n))]);
  if (mx == -INFINITY) return -INFINITY;
  return mx + static_cast<float>(std::log(ops::sum_exp(logits.data(), n, mx)));
}

void top_logprobs(std::span<const float> logits, float lse, size_t n,
                  std::vector<LogprobEntry>& out) {
  out.clear();
  n = std::min(n, logits.size());
  if (n == 0) return;
  std::vector<Candidate> heap;
  heap.reserve(n);
  for (size_t i = 0; i < n; ++i) heap.push_back({static_cast<int32_t>(i), logit_key(logits[i])});
  std::make_heap(heap.begin(), heap.end(), better);
  for (size_t i = n; i < logits.size(); ++i) {
    if (logits[i] > heap.front().logit) {
      std::pop_heap(heap.begin(), heap.end(), better);
      heap.back() = {static_cast<int32_t>(i), logits[i]};
      std::push_heap(heap.begin(), heap.end(), better);
    }
  }
  std::sort_heap(heap.begin(), heap.end(), better);
  out.reserve(n);
  for (const auto& c : heap) out.push_back({c.token, logprob_of(c.logit, lse)});
}

}  // namespace hearth
