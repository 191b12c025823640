#include "tokenizer/wpm.h"

#include <utf8proc.h>

#include <algorithm>
#include <string>
#include <utility>

#include "tokenizer/special.h"
#include "tokenizer/utf8.h"
#include "util/error.h"

namespace hearth {

namespace {

using Cp = utf8proc_int32_t;

// Decodes the well-formed character at s[i] (length `len` from utf8_char_len).
Cp decode_char(std::string_view s, size_t i, size_t len) {
  const auto b = [&](size_t k) { return static_cast<uint32_t>(static_cast<uint8_t>(s[i + k])); };
  switch (len) {
    case 1:
      return static_cast<Cp>(b(0));
    case 2:
      return static_cast<Cp>(((b(0) & 0x1F) << 6) | (b(1) & 0x3F));
    case 3:
      return static_cast<Cp>(((b(0) & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F));
    default:
      return static_cast<Cp>(((b(0) & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) |
                             (b(3) & 0x3F));
  }
}

void append_utf8(Cp cp, std::string& out) {
  utf8proc_uint8_t buf[4];
  const utf8proc_ssize_t n = utf8proc_encode_char(cp, buf);
  out.append(reinterpret_cast<const char*>(buf), static_cast<size_t>(n));
}

bool is_white_space(Cp c) {
  switch (c) {
    case '\t':
    case '\n':
    case 0x0B:
    case 0x0C:
    case '\r':
    case ' ':
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return c >= 0x2000 && c <= 0x200A;
  }
}

// BertNormalizer's "control": any other-category character except \t \n \r (whitespace).
bool is_control(Cp c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  switch (utf8proc_category(c)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
      return true;
    default:
      return false;
  }
}

bool is_cjk(Cp c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

bool is_punctuation(Cp c) {
  if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
      (c >= 123 && c <= 126)) {
    return true;
  }
  switch (utf8proc_category(c)) {
    case UTF8PROC_CATEGORY_PC:
    case UTF8PROC_CATEGORY_PD:
    case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI:
    case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO:
      return true;
    default:
      return false;
  }
}

// Step 1: the normalized code points of `text`.
std::vector<Cp> normalize(std::string_view text) {
  // clean_text + handle_chinese_chars, re-encoded as UTF-8 for utf8proc's decomposition.
  std::string cleaned;
  cleaned.reserve(text.size() + 8);
  for (size_t i = 0; i < text.size();) {
    const size_t len = utf8_char_len(text, i);
    if (len == 0) {  // ill-formed: U+FFFD, which clean_text drops
      ++i;
      continue;
    }
    const Cp c = decode_char(text, i, len);
    i += len;
    if (c == 0 || c == 0xFFFD || is_control(c)) continue;
    if (is_white_space(c)) {
      cleaned += ' ';
    } else if (is_cjk(c)) {
      cleaned += ' ';
      append_utf8(c, cleaned);
      cleaned += ' ';
    } else {
      append_utf8(c, cleaned);
    }
  }
  // NFD (canonical decomposition and ordering).
  std::vector<Cp> cps(cleaned.size() + 16);
  const auto* src = reinterpret_cast<const utf8proc_uint8_t*>(cleaned.data());
  const auto src_len = static_cast<utf8proc_ssize_t>(cleaned.size());
  utf8proc_ssize_t n = utf8proc_decompose(
      src, src_len, cps.data(), static_cast<utf8proc_ssize_t>(cps.size()), UTF8PROC_DECOMPOSE);
  if (n > static_cast<utf8proc_ssize_t>(cps.size())) {
    cps.resize(static_cast<size_t>(n));
    n = utf8proc_decompose(src, src_len, cps.data(), n, UTF8PROC_DECOMPOSE);
  }
  if (n < 0) fail("WordPiece normalization failed: {}", utf8proc_errmsg(n));
  cps.resize(static_cast<size_t>(n));
  // strip_accents (non-spacing marks), lowercase.
  size_t w = 0;
  for (const Cp c : cps) {
    if (utf8proc_category(c) == UTF8PROC_CATEGORY_MN) continue;
    cps[w++] = utf8proc_tolower(c);
  }
  cps.resize(w);
  return cps;
}

// Step 2: calls word(utf8, n_chars) for each word.
template <typename F>
void for_each_word(const std::vector<Cp>& cps, F&& word) {
  std::string cur;
  size_t n_chars = 0;
  auto flush = [&] {
    if (!cur.empty()) word(std::string_view(cur), n_chars);
    cur.clear();
    n_chars = 0;
  };
  for (const Cp c : cps) {
    if (is_white_space(c)) {
      flush();
    } else if (is_punctuation(c)) {
      flush();
      append_utf8(c, cur);
      n_chars = 1;
      flush();
    } else {
      append_utf8(c, cur);
      ++n_chars;
    }
  }
  flush();
}

}  // namespace

WpmModel::WpmModel(std::shared_ptr<const Vocab> vocab) : vocab_(std::move(vocab)) {
  if (!vocab_) fail("WpmModel: null vocabulary");
  if (vocab_->type() != VocabType::Wpm) {
    fail("WpmModel: tokenizer model '{}' is not WordPiece ('bert')", vocab_->model());
  }
  unk_ = vocab_->unk();
  if (unk_ == kNoToken) unk_ = vocab_->find("[UNK]");
  if (unk_ == kNoToken) fail("WordPiece vocabulary without an unknown token");
}

void WpmModel::encode_word(std::string_view word, size_t n_chars, std::vector<TokenId>& out) const {
  if (n_chars > kMaxWordChars) {
    out.push_back(unk_);
    return;
  }
  const size_t before = out.size();
  const size_t max_len = vocab_->max_token_len();
  std::string probe;
  size_t start = 0;
  while (start < word.size()) {
    TokenId found = kNoToken;
    size_t found_end = start;
    // Longest first; candidate ends at character boundaries only.
    size_t end = std::min(word.size(), start + max_len);
    while (end > start) {
      if (end == word.size() || (static_cast<uint8_t>(word[end]) & 0xC0) != 0x80) {
        probe.clear();
        if (start == 0) probe += kSpmSpace;  // word-initial piece
        probe.append(word.substr(start, end - start));
        if (const TokenId id = vocab_->find(probe); id != kNoToken) {
          found = id;
          found_end = end;
          break;
        }
      }
      --end;
    }
    if (found == kNoToken) {  // no segmentation: the whole word is unknown
      out.resize(before);
      out.push_back(unk_);
      return;
    }
    out.push_back(found);
    start = found_end;
  }
}

void WpmModel::encode_fragment(std::string_view text, std::vector<TokenId>& out) const {
  for_each_word(normalize(text),
                [&](std::string_view word, size_t n_chars) { encode_word(word, n_chars, out); });
}

std::vector<std::string> WpmModel::words(std::string_view text) const {
  std::vector<std::string> out;
  for_each_word(normalize(text), [&](std::string_view word, size_t) { out.emplace_back(word); });
  return out;
}

std::vector<TokenId> WpmModel::tokenize(std::string_view text, bool add_special, bool parse_special,
                                        const ByteRanges* control_ranges) const {
  const Vocab& v = *vocab_;
  std::vector<TokenId> out;
  if (add_special && v.add_bos() && v.bos() != kNoToken) out.push_back(v.bos());
  for (const Fragment& f : split_special_tokens(v, text, parse_special, control_ranges)) {
    if (f.is_token()) {
      out.push_back(f.token);
    } else {
      encode_fragment(text.substr(f.offset, f.length), out);
    }
  }
  if (add_special) {
    if (v.sep() != kNoToken) out.push_back(v.sep());
    if (v.add_eos() && v.eos() != kNoToken) out.push_back(v.eos());
  }
  return out;
}

}  // namespace hearth
