#include "tokenizer/tokenizer.h"

#include "tokenizer/spm.h"
#include "util/error.h"

namespace hearth {

Tokenizer Tokenizer::from_gguf(const gguf::File& file) {
  return from_vocab(Vocab::from_gguf(file));
}

Tokenizer Tokenizer::from_vocab(Vocab vocab) {
  switch (vocab.type()) {
    case VocabType::Spm:
      break;
    case VocabType::Bpe:
    case VocabType::Wpm:
    case VocabType::Ugm:
    case VocabType::Rwkv:
      fail("tokenizer model '{}' is not supported yet", vocab.model());
  }
  return Tokenizer(std::make_shared<const Vocab>(std::move(vocab)));
}

std::vector<TokenId> Tokenizer::encode(std::string_view text, bool add_special,
                                       bool parse_special) const {
  switch (vocab_->type()) {
    case VocabType::Spm:
      return spm_tokenize(*vocab_, text, add_special, parse_special);
    default:
      break;
  }
  fail("tokenizer model '{}' is not supported yet", vocab_->model());
}

std::string Tokenizer::decode(std::span<const TokenId> ids, const DecodeOptions& options) const {
  return hearth::decode(*vocab_, ids, options);
}

std::string Tokenizer::token_to_piece(TokenId id, bool render_special) const {
  return hearth::token_to_piece(*vocab_, id, render_special);
}

StreamingDetokenizer Tokenizer::streaming_detokenizer(DecodeOptions options) const {
  return StreamingDetokenizer(vocab_, options);
}

}  // namespace hearth
