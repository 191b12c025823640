// Token counts over the last `last_n` tokens of a sequence, updated per accepted token in O(1),
// for the repeat / presence / frequency penalties.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace hearth {

class PenaltyState {
 public:
  // last_n: window length; -1 = the whole history; 0 = nothing is counted.
  PenaltyState(int32_t n_vocab, int32_t last_n);

  void clear();
  void push(int32_t token);  // token must be in [0, n_vocab)

  // Tokens with a non-zero count in the window (unordered) and their counts.
  std::span<const int32_t> active() const { return active_; }
  int32_t count(int32_t token) const { return counts_[static_cast<size_t>(token)]; }

 private:
  void add(int32_t token, int32_t delta);

  int32_t last_n_;
  std::vector<int32_t> counts_;      // per token
  std::vector<int32_t> active_pos_;  // index into active_, or -1
  std::vector<int32_t> active_;
  std::vector<int32_t> ring_;  // the window, when last_n > 0
  size_t ring_head_ = 0, ring_size_ = 0;
};

// llama.cpp's penalties on one logit with count > 0: the repeat penalty divides a positive
// logit and multiplies a negative one, then frequency * count + presence is subtracted.
inline float penalize(float logit, int32_t count, float repeat, float frequency, float presence) {
  logit = logit <= 0.0f ? logit * repeat : logit / repeat;
  return logit - static_cast<float>(count) * frequency - presence;
}

}  // namespace hearth
