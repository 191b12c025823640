#include "tokenizer/detokenizer.h"

#include <utility>

#include "tokenizer/byte_level.h"
#include "tokenizer/utf8.h"
#include "util/error.h"

namespace hearth {

namespace {

// Appends `text` with every U+2581 replaced by a space.
void append_unescaped(std::string_view text, std::string& out) {
  size_t pos = 0;
  while (true) {
    const size_t hit = text.find(kSpmSpace, pos);
    if (hit == std::string_view::npos) break;
    out.append(text.data() + pos, hit - pos);
    out += ' ';
    pos = hit + kSpmSpace.size();
  }
  out.append(text.data() + pos, text.size() - pos);
}

}  // namespace

void append_piece(const Vocab& vocab, TokenId id, bool render_special, std::string& out) {
  const uint32_t attr = vocab.attr(id);  // throws for an invalid id
  if (vocab.type() == VocabType::Rwkv || vocab.type() == VocabType::Ugm) {
    fail("detokenization for tokenizer model '{}' is not supported", vocab.model());
  }
  constexpr uint32_t kSpecial = kAttrUnknown | kAttrControl;
  if (attr & kSpecial) {
    if (render_special) out += vocab.text(id);
    return;
  }
  if (attr & kAttrUserDefined) {
    out += vocab.text(id);
  } else if (attr & kAttrNormal) {
    if (vocab.type() == VocabType::Bpe) {
      byte_level_decode_append(vocab.text(id), out);
    } else {
      append_unescaped(vocab.text(id), out);
    }
  } else if (attr & kAttrByte) {
    out += static_cast<char>(vocab.token_to_byte(id));
  }
  // UNUSED and UNDEFINED tokens render as nothing.
}

std::string token_to_piece(const Vocab& vocab, TokenId id, bool render_special) {
  std::string out;
  append_piece(vocab, id, render_special, out);
  return out;
}

std::string decode(const Vocab& vocab, std::span<const TokenId> ids, const DecodeOptions& options) {
  std::string out;
  bool strip = options.strip_space_prefix && vocab.add_space_prefix();
  for (const TokenId id : ids) {
    const size_t before = out.size();
    append_piece(vocab, id, options.render_special, out);
    if (strip && out.size() > before) {
      // Every earlier piece was empty, so this one starts the output.
      if (out[before] == ' ') out.erase(before, 1);
      strip = false;
    }
  }
  return out;
}

StreamingDetokenizer::StreamingDetokenizer(const Vocab& vocab, DecodeOptions options)
    : vocab_(&vocab), options_(options) {}

StreamingDetokenizer::StreamingDetokenizer(std::shared_ptr<const Vocab> vocab,
                                           DecodeOptions options)
    : owner_(std::move(vocab)), vocab_(owner_.get()), options_(options) {
  if (!vocab_) fail("StreamingDetokenizer: null vocabulary");
}

size_t StreamingDetokenizer::push(TokenId id, std::string& out) {
  piece_.clear();
  append_piece(*vocab_, id, options_.render_special, piece_);
  if (piece_.empty()) return 0;
  size_t skip = 0;
  if (at_start_) {
    at_start_ = false;
    if (options_.strip_space_prefix && vocab_->add_space_prefix() && piece_[0] == ' ') skip = 1;
  }
  pending_.append(piece_, skip);
  const size_t before = out.size();
  const size_t consumed = utf8_sanitize_append(pending_, out, /*final=*/false);
  pending_.erase(0, consumed);
  return out.size() - before;
}

std::string StreamingDetokenizer::push(TokenId id) {
  std::string out;
  push(id, out);
  return out;
}

std::string StreamingDetokenizer::flush() {
  std::string out;
  utf8_sanitize_append(pending_, out, /*final=*/true);
  reset();
  return out;
}

void StreamingDetokenizer::reset() {
  pending_.clear();
  at_start_ = true;
}

}  // namespace hearth
