#include "tokenizer/tokenizer.h"

#include <chrono>

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
  return encode_impl(text, add_special, parse_special, nullptr);
}

std::vector<TokenId> Tokenizer::encode_with_control_ranges(std::string_view text, bool add_special,
                                                           const ByteRanges& ranges) const {
  return encode_impl(text, add_special, true, &ranges);
}

std::vector<TokenId> Tokenizer::encode_impl(std::string_view text, bool add_special,
                                            bool parse_special, const ByteRanges* ranges) const {
  const auto start = std::chrono::steady_clock::now();
  std::vector<TokenId> ids;
  switch (vocab_->type()) {
    case VocabType::Spm:
      ids = spm_tokenize(*vocab_, text, add_special, parse_special, ranges);
      break;
    case VocabType::Bpe:
      ids = bpe_->tokenize(text, add_special, parse_special, ranges);
      break;
    case VocabType::Wpm:
      ids = wpm_->tokenize(text, add_special, parse_special, ranges);
      break;
    default:
      fail("tokenizer model '{}' is not supported", vocab_->model());
  }
  counter_->calls.fetch_add(1, std::memory_order_relaxed);
  counter_->bytes.fetch_add(static_cast<int64_t>(text.size()), std::memory_order_relaxed);
  counter_->nanoseconds.fetch_add(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count(),
      std::memory_order_relaxed);
  return ids;
}

EncodeStats Tokenizer::encode_stats() const {
  return {counter_->calls.load(std::memory_order_relaxed),
          counter_->bytes.load(std::memory_order_relaxed),
          counter_->nanoseconds.load(std::memory_order_relaxed)};
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
