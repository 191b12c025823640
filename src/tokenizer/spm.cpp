#include "tokenizer/spm.h"

#include <algorithm>
#include <limits>
#include <queue>
#include <string>

#include "tokenizer/special.h"
#include "tokenizer/utf8.h"
#include "util/error.h"

namespace hearth {

namespace {

// A run of the text in the doubly linked list of live symbols. Merged-away symbols get n = 0.
struct Symbol {
  int32_t prev;
  int32_t next;
  uint32_t start;
  uint32_t n;
};

// A candidate merge of two adjacent symbols into the token of their concatenation.
struct Bigram {
  float score;
  int32_t left;
  int32_t right;
  uint32_t size;  // bytes of the concatenation when queued; a mismatch later means stale
};

// Max-heap order: higher score first, then the leftmost pair.
struct BigramOrder {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

class Segmenter {
 public:
  Segmenter(const Vocab& vocab, std::string_view text) : vocab_(vocab), text_(text) {}

  void run(std::vector<TokenId>& out) {
    if (text_.empty()) return;
    if (text_.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
      fail("text of {} bytes is too long to tokenize in one piece", text_.size());
    }
    split_characters();
    for (size_t i = 1; i < symbols_.size(); ++i) {
      try_add_bigram(static_cast<int32_t>(i - 1), static_cast<int32_t>(i));
    }
    merge();
    for (int32_t i = 0; i != -1; i = symbols_[static_cast<size_t>(i)].next) {
      emit(symbols_[static_cast<size_t>(i)], out);
    }
  }

 private:
  void split_characters() {
    symbols_.reserve(text_.size());
    size_t offs = 0;
    while (offs < text_.size()) {
      // A well-formed character is one symbol; every byte of an ill-formed sequence is a
      // symbol of its own (see spm.h).
      const size_t len = std::max<size_t>(utf8_char_len(text_, offs), 1);
      const auto index = static_cast<int32_t>(symbols_.size());
      offs += len;
      symbols_.push_back({index - 1, offs == text_.size() ? -1 : index + 1,
                          static_cast<uint32_t>(offs - len), static_cast<uint32_t>(len)});
    }
  }

  std::string_view view(const Symbol& s) const { return text_.substr(s.start, s.n); }

  void try_add_bigram(int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols_[static_cast<size_t>(left)];
    const Symbol& r = symbols_[static_cast<size_t>(right)];
    const size_t size = static_cast<size_t>(l.n) + r.n;
    if (size > vocab_.max_token_len()) return;
    const TokenId id = vocab_.find(text_.substr(l.start, size));
    if (id == kNoToken) return;
    queue_.push({vocab_.score(id), left, right, static_cast<uint32_t>(size)});
  }

  void merge() {
    while (!queue_.empty()) {
      const Bigram b = queue_.top();
      queue_.pop();
      Symbol& l = symbols_[static_cast<size_t>(b.left)];
      Symbol& r = symbols_[static_cast<size_t>(b.right)];
      // Stale: one side was merged into something else since this pair was queued.
      if (l.n == 0 || r.n == 0 || l.n + r.n != b.size) continue;
      l.n += r.n;
      r.n = 0;
      l.next = r.next;
      if (r.next >= 0) symbols_[static_cast<size_t>(r.next)].prev = b.left;
      try_add_bigram(l.prev, b.left);
      try_add_bigram(b.left, l.next);
    }
  }

  // A merged symbol is always a token (merges only form tokens); a single character may not
  // be one, and then falls back to its bytes.
  void emit(const Symbol& s, std::vector<TokenId>& out) const {
    const std::string_view piece = view(s);
    if (const TokenId id = vocab_.find(piece); id != kNoToken) {
      out.push_back(id);
      return;
    }
    for (const char c : piece) {
      TokenId id = vocab_.byte_to_token(static_cast<uint8_t>(c));
      if (id == kNoToken) id = vocab_.unk();
      if (id == kNoToken) {
        fail(
            "cannot tokenize byte 0x{:02X}: the vocabulary has no byte token for it and no "
            "unknown token",
            static_cast<uint8_t>(c));
      }
      out.push_back(id);
    }
  }

  const Vocab& vocab_;
  std::string_view text_;
  std::vector<Symbol> symbols_;
  std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue_;
};

}  // namespace

void spm_segment(const Vocab& vocab, std::string_view text, std::vector<TokenId>& out) {
  Segmenter(vocab, text).run(out);
}

std::vector<TokenId> spm_tokenize(const Vocab& vocab, std::string_view text, bool add_special,
                                  bool parse_special, const ByteRanges* control_ranges) {
  std::vector<TokenId> out;
  out.reserve(text.size() / 3 + 2);
  if (add_special && vocab.add_bos()) out.push_back(vocab.bos());

  bool prev_special = true;  // the text start counts as "after a special token"
  std::string buf;
  for (const Fragment& f : split_special_tokens(vocab, text, parse_special, control_ranges)) {
    if (f.is_token()) {
      out.push_back(f.token);
      prev_special = true;
      continue;
    }
    buf.clear();
    buf.reserve(f.length + kSpmSpace.size() * 4);
    if (vocab.add_space_prefix() && prev_special) buf += kSpmSpace;
    for (const char c : text.substr(f.offset, f.length)) {
      if (c == ' ') {
        buf += kSpmSpace;
      } else {
        buf += c;
      }
    }
    spm_segment(vocab, buf, out);
    prev_special = false;
  }

  if (add_special && vocab.add_eos()) out.push_back(vocab.eos());
  return out;
}

}  // namespace hearth
