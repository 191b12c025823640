#include "sampling/basic_sampler.h"

#include <cmath>
#include <vector>

namespace hearth {

int32_t argmax(std::span<const float> logits) {
  if (logits.empty()) return -1;
  size_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i)
    if (logits[i] > logits[best]) best = i;
  return static_cast<int32_t>(best);
}

int32_t BasicSampler::sample(std::span<const float> logits) {
  if (!(temp_ > 0.0f) || logits.size() < 2) return argmax(logits);
  const float mx = logits[static_cast<size_t>(argmax(logits))];
  std::vector<double> p(logits.size());
  double sum = 0.0;
  for (size_t i = 0; i < logits.size(); ++i) {
    p[i] = std::exp(static_cast<double>(logits[i] - mx) / temp_);
    sum += p[i];
  }
  // Inverse-CDF draw from a 53-bit uniform: deterministic for a given seed on every platform
  // (std::*_distribution implementations differ between standard libraries).
  const double r = static_cast<double>(rng_() >> 11) * 0x1.0p-53 * sum;
  double acc = 0.0;
  for (size_t i = 0; i < p.size(); ++i) {
    acc += p[i];
    if (r < acc) return static_cast<int32_t>(i);
  }
  return argmax(logits);
}

}  // namespace hearth
