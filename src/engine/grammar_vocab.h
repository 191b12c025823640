// The vocabulary as constrained sampling sees it: each token's text as bytes (the detokenizer's
// piece; control, unknown and unused tokens empty, so a grammar never picks them) in a byte trie
// (sampling/token_trie.h), with the end-of-generation tokens apart. Built once per engine, on
// the first request with a grammar (about 0.3 s for a 150k-token vocabulary).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>

#include "sampling/token_trie.h"
#include "tokenizer/tokenizer.h"

namespace hearth {

std::shared_ptr<const TokenTrie> build_token_trie(const Tokenizer& tok, int64_t n_vocab);

// build_token_trie once, on first use, from any thread.
class LazyTokenTrie {
 public:
  LazyTokenTrie(const Tokenizer& tok, int64_t n_vocab) : tok_(tok), n_vocab_(n_vocab) {}
  std::shared_ptr<const TokenTrie> get();

 private:
  const Tokenizer& tok_;
  int64_t n_vocab_;
  std::mutex mu_;
  std::shared_ptr<const TokenTrie> trie_;
};

}  // namespace hearth
