// The minimal sampler `hearth run` needs until the full chain lands: greedy at temperature 0,
// otherwise softmax(logits / T) sampled with a seeded generator.
#pragma once

#include <cstdint>
#include <random>
#include <span>

namespace hearth {

// Index of the largest logit; the lowest index wins ties. Empty input → -1.
int32_t argmax(std::span<const float> logits);

class BasicSampler {
 public:
  BasicSampler(float temperature, uint64_t seed) : temp_(temperature), rng_(seed) {}
  int32_t sample(std::span<const float> logits);

 private:
  float temp_;
  std::mt19937_64 rng_;
};

}  // namespace hearth
