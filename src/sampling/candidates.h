// The working set of one sampling step. It starts as the whole vocabulary without copying it
// ("dense": token i has logit view[i]); the first stage that truncates or rewrites logits
// turns it into an explicit list ("sparse"). Buffers are kept across steps, so a step
// allocates nothing once they have grown.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

namespace hearth {

struct Candidate {
  int32_t token;
  float logit;
};

// The total order every stage sorts and selects by: higher logit first, lower id on ties
// (NaN counts as -infinity). Being total, it makes each stage's result independent of the
// sorting algorithm, hence identical across standard libraries.
inline float logit_key(float x) {
  return x != x ? -INFINITY : x;
}
inline bool better(const Candidate& a, const Candidate& b) {
  const float ka = logit_key(a.logit), kb = logit_key(b.logit);
  return ka > kb || (ka == kb && a.token < b.token);
}

class Candidates {
 public:
  // Start a step over `logits` (viewed, not copied).
  void reset(std::span<const float> logits) {
    view_ = logits;
    dense_ = true;
    sorted_ = false;
    items_.clear();
  }

  bool dense() const { return dense_; }
  size_t size() const { return dense_ ? view_.size() : items_.size(); }
  std::span<const float> dense_logits() const { return view_; }

  // Dense logits that may be rewritten in place (copied into a scratch buffer on first use).
  std::span<float> mutable_dense() {
    if (view_.data() != scratch_.data() || scratch_.size() != view_.size()) {
      scratch_.resize(view_.size());
      std::memcpy(scratch_.data(), view_.data(), view_.size() * sizeof(float));
      view_ = scratch_;
    }
    return scratch_;
  }

  // The explicit list (materialising the dense view in token order when needed; NaN logits
  // become -infinity).
  std::vector<Candidate>& items() {
    if (dense_) {
      items_.resize(view_.size());
      for (size_t i = 0; i < view_.size(); ++i)
        items_[i] = {static_cast<int32_t>(i), logit_key(view_[i])};
      dense_ = false;
      sorted_ = false;
    }
    return items_;
  }
  // Switch to an explicit list the caller fills (the truncating scans write it directly).
  std::vector<Candidate>& start_sparse() {
    items_.clear();
    dense_ = false;
    sorted_ = false;
    return items_;
  }

  // Scratch for stages (reused across steps).
  std::vector<float>& probs() { return probs_; }
  std::vector<uint32_t>& order() { return order_; }
  std::vector<double>& shifts() { return shifts_; }
  std::vector<Candidate>& spare() { return spare_; }

  // Whether items() is in the total order `better`.
  bool sorted() const { return !dense_ && sorted_; }
  void set_sorted(bool s) { sorted_ = s; }

 private:
  std::span<const float> view_;
  std::vector<float> scratch_;
  std::vector<Candidate> items_;
  std::vector<float> probs_;
  std::vector<uint32_t> order_;
  std::vector<double> shifts_;
  std::vector<Candidate> spare_;
  bool dense_ = true;
  bool sorted_ = false;
};

}  // namespace hearth
