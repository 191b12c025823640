// Incremental state for DRY ("don't repeat yourself"): which tokens would extend a repeat of
// the text's end, and how long that repeat is.
//
// Semantics (as text-generation-webui's DRY, which llama.cpp follows): let h be the last
// `last_n` tokens. For each earlier position i (i < end) whose token equals the last token,
// the match length is the number of tokens, counted back from i and from the end together,
// that are equal and not sequence breakers, staying inside the window. The token h[i+1]
// (unless it is a breaker) gets the longest such length over all i; a length >= allowed_length
// costs multiplier * base^(length - allowed_length). If the last token is a breaker, nothing.
//
// Incremental form: the positions whose match length is >= K (K = 2 when allowed_length >= 2,
// else 1) are exactly the earlier occurrences of the last K tokens, found through an index of
// K-grams; their lengths follow from the previous step's (m(i) = m_prev(i - 1) + 1). A step
// costs O(occurrences of the last K-gram in the window), independent of the history length
// for text that does not repeat one bigram without end.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

namespace hearth {

struct DryMatch {
  int32_t token;
  int32_t length;
};

class DryState {
 public:
  // last_n: window length, -1 = the whole history (0 is handled by the caller: DRY is off).
  DryState(int32_t allowed_length, int32_t last_n);

  void clear();
  void push(int32_t token, bool is_breaker);
  size_t size() const { return tokens_.size(); }

  // Tokens whose match length is >= allowed_length, each once with its longest length, sorted
  // by token. Valid until the next call.
  std::span<const DryMatch> matches();

 private:
  size_t window_start(size_t n) const;

  struct Ends {
    std::vector<int32_t> pos;  // ascending end positions of one K-gram
    size_t first = 0;          // positions before it have left the window
  };

  int32_t allowed_;
  int32_t last_n_;
  int32_t k_;
  std::vector<int32_t> tokens_;
  std::vector<uint8_t> breaker_;
  std::unordered_map<uint64_t, Ends> index_;
  std::vector<std::pair<int32_t, int32_t>> live_, next_;  // (end position, match length)
  std::vector<DryMatch> out_;
};

}  // namespace hearth
