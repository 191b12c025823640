// One bit per token of a vocabulary: which tokens are allowed next.
#pragma once

#include <bit>
#include <cstdint>
#include <span>
#include <vector>

namespace hearth {

class TokenMask {
 public:
  // n tokens, none allowed.
  void reset(size_t n) {
    n_ = n;
    words_.assign((n + 63) / 64, 0);
  }
  void set(int32_t token) { words_[static_cast<size_t>(token) >> 6] |= bit(token); }
  void unset(int32_t token) { words_[static_cast<size_t>(token) >> 6] &= ~bit(token); }
  bool test(int32_t token) const {
    return token >= 0 && static_cast<size_t>(token) < n_ &&
           (words_[static_cast<size_t>(token) >> 6] & bit(token)) != 0;
  }
  size_t size() const { return n_; }
  size_t count() const {
    size_t c = 0;
    for (uint64_t w : words_) c += static_cast<size_t>(std::popcount(w));
    return c;
  }
  std::span<const uint64_t> words() const { return words_; }

 private:
  static uint64_t bit(int32_t token) { return uint64_t{1} << (static_cast<uint32_t>(token) & 63); }

  size_t n_ = 0;
  std::vector<uint64_t> words_;
};

}  // namespace hearth
