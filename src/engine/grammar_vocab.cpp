#include "engine/grammar_vocab.h"

#include <string>
#include <vector>

namespace hearth {

std::shared_ptr<const TokenTrie> build_token_trie(const Tokenizer& tok, int64_t n_vocab) {
  const Vocab& v = tok.vocab();
  std::vector<std::string> pieces(static_cast<size_t>(n_vocab));
  std::vector<int32_t> ends;
  for (int64_t i = 0; i < n_vocab; ++i) {
    const auto id = static_cast<TokenId>(i);
    if (!v.valid_id(id)) continue;  // the model's rows past the vocabulary: never chosen
    if (tok.is_eog(id)) {
      ends.push_back(id);
      continue;
    }
    if (v.is_control(id) || v.is_unknown(id) || v.is_unused(id)) continue;
    pieces[static_cast<size_t>(i)] = tok.token_to_piece(id, false);
  }
  return std::make_shared<const TokenTrie>(pieces, std::move(ends));
}

std::shared_ptr<const TokenTrie> LazyTokenTrie::get() {
  std::lock_guard lock(mu_);
  if (!trie_) trie_ = build_token_trie(tok_, n_vocab_);
  return trie_;
}

}  // namespace hearth
