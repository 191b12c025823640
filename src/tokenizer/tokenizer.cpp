#include "tokenizer/tokenizer.h"

#include "tokenizer/bpe.h"
#include "tokenizer/spm.h"
#include "tokenizer/wpm.h"
#include "util/error.h"

namespace hearth {

Tokenizer Tokenizer::from_gguf(const gguf::File& file) {
  return from_vocab(Vocab::from_gguf(file));
}

Tokenizer Tokenizer::from_vocab(Vocab vocab) {
  return from_vocab(std::move(vocab), {});
}

Tokenizer Tokenizer::from_vocab(Vocab vocab, const BpeModel::Options& bpe_options) {
  Tokenizer t(std::make_shared<const Vocab>(std::move(vocab)));
  switch (t.vocab_->type()) {
    case VocabType::Spm:
      break;
    case VocabType::Bpe:
      t.bpe_ = std::make_shared<const BpeModel>(t.vocab_, bpe_options);
      break;
    case VocabType::Wpm:
      t.wpm_ = std::make_shared<const WpmModel>(t.vocab_);
      break;
    case VocabType::Ugm:
    case VocabType::Rwkv:
      fail("tokenizer model '{}' is not supported", t.vocab_->model());
  }
  return t;
}

std::vector<TokenId> Tokenizer::encode(std::string_view text, bool add_special,
                                       bool parse_special) const {
  switch (vocab_->type()) {
    case VocabType::Spm:
      return spm_tokenize(*vocab_, text, add_special, parse_special);
    case VocabType::Bpe:
      return bpe_->tokenize(text, add_special, parse_special);
    case VocabType::Wpm:
      return wpm_->tokenize(text, add_special, parse_special);
    default:
      break;
  }
  fail("tokenizer model '{}' is not supported", vocab_->model());
}

std::vector<TokenId> Tokenizer::encode_with_control_ranges(std::string_view text, bool add_special,
                                                           const ByteRanges& ranges) const {
  switch (vocab_->type()) {
    case VocabType::Spm:
      return spm_tokenize(*vocab_, text, add_special, true, &ranges);
    case VocabType::Bpe:
      return bpe_->tokenize(text, add_special, true, &ranges);
    case VocabType::Wpm:
      return wpm_->tokenize(text, add_special, true, &ranges);
    default:
      break;
  }
  fail("tokenizer model '{}' is not supported", vocab_->model());
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
