#include "chat/text_wrap.h"

#include <algorithm>
#include <cctype>
#include <cstdint>

#include "chat/py_string.h"

namespace hearth::chat::py {
namespace {

// textwrap's own whitespace: ASCII only (not str.isspace()).
bool wrap_space(uint32_t c) {
  return c == ' ' || (c >= '\t' && c <= '\r');
}

// Python's \w. Outside ASCII this is an approximation without Unicode tables: code points are
// word characters except the Latin-1 and general/CJK punctuation blocks and Unicode spaces.
bool word_char(uint32_t c) {
  if (c < 0x80) return std::isalnum(static_cast<int>(c)) || c == '_';
  if (is_space(c)) return false;
  if (c < 0xC0)
    return c == 0xAA || c == 0xB5 || c == 0xBA || c == 0xB2 || c == 0xB3 || c == 0xB9 ||
           (c >= 0xBC && c <= 0xBE);
  if (c == 0xD7 || c == 0xF7) return false;
  return !(c >= 0x2000 && c <= 0x206F) && !(c >= 0x3000 && c <= 0x3003) &&
         !(c >= 0x3008 && c <= 0x3020);
}
// [^\d\W]: a word character that is not a digit.
bool letter(uint32_t c) {
  return word_char(c) && !(c >= '0' && c <= '9');
}
// [\w!"'&.,?]: what may precede an em-dash.
bool word_punct(uint32_t c) {
  return word_char(c) || c == '!' || c == '"' || c == '\'' || c == '&' || c == '.' || c == ',' ||
         c == '?';
}

struct Text {
  std::vector<uint32_t> cps;
  std::vector<size_t> off;  // byte offset of each code point, then the size
  uint32_t at(size_t i) const { return i < cps.size() ? cps[i] : 0; }
  bool is(size_t i, uint32_t c) const { return i < cps.size() && cps[i] == c; }
  bool letter_at(size_t i) const { return i < cps.size() && letter(cps[i]); }
  // A run of two or more '-' from i, followed by a word character.
  bool dashes_then_word(size_t i) const {
    size_t j = i;
    while (is(j, '-')) ++j;
    return j - i >= 2 && j < cps.size() && word_char(cps[j]);
  }
};

// One match of textwrap's wordsep_re at i (which always matches): the end of the chunk.
size_t word_chunk_end(const Text& t, size_t i) {
  const size_t n = t.cps.size();
  if (wrap_space(t.cps[i])) {  // whitespace run
    while (i < n && wrap_space(t.cps[i])) ++i;
    return i;
  }
  if (t.cps[i] == '-' && i > 0 && word_punct(t.cps[i - 1]) && t.dashes_then_word(i)) {
    while (t.is(i, '-')) ++i;  // em-dash between words
    return i;
  }
  // A word, as short as possible, up to a hyphen between letters, whitespace or an em-dash.
  for (size_t j = i + 1;; ++j) {
    if (t.is(j, '-')) {
      const bool after = (j >= 2 && t.letter_at(j - 2) && t.letter_at(j - 1)) ||
                         (j >= 3 && t.letter_at(j - 3) && t.is(j - 2, '-') && t.letter_at(j - 1));
      const bool before =
          t.letter_at(j + 1) && (t.letter_at(j + 2) || (t.is(j + 2, '-') && t.letter_at(j + 3)));
      if (after && before) return j + 1;
    }
    if (j == n || wrap_space(t.cps[j])) return j;
    if (word_punct(t.cps[j - 1]) && t.dashes_then_word(j)) return j;
  }
}

struct Chunk {
  size_t begin, end;  // code point indices
  size_t size() const { return end - begin; }
};

std::vector<Chunk> split_chunks(const Text& t, bool on_hyphens) {
  std::vector<Chunk> chunks;
  for (size_t i = 0; i < t.cps.size();) {
    size_t e;
    if (on_hyphens) {
      e = word_chunk_end(t, i);
    } else {  // wordsep_simple_re: whitespace runs and what lies between them
      e = i + 1;
      const bool ws = wrap_space(t.cps[i]);
      while (e < t.cps.size() && wrap_space(t.cps[e]) == ws) ++e;
    }
    chunks.push_back({i, e});
    i = e;
  }
  return chunks;
}

bool blank(const Text& t, const Chunk& c) {
  for (size_t i = c.begin; i < c.end; ++i)
    if (!is_space(t.cps[i])) return false;
  return true;
}

}  // namespace

std::vector<std::string> wrap(std::string_view text, const WrapOptions& o) {
  Text t;
  for (size_t i = 0; i < text.size();) {
    t.off.push_back(i);
    t.cps.push_back(decode(text, i));
  }
  t.off.push_back(text.size());
  std::vector<Chunk> chunks = split_chunks(t, o.split_on_hyphens);
  std::reverse(chunks.begin(), chunks.end());  // consumed from the back, as textwrap does
  std::vector<std::string> lines;
  const size_t width = o.width;
  while (!chunks.empty()) {
    std::vector<Chunk> line;
    size_t len = 0;
    if (!lines.empty() && blank(t, chunks.back())) chunks.pop_back();  // no leading blanks
    while (!chunks.empty() && len + chunks.back().size() <= width) {
      len += chunks.back().size();
      line.push_back(chunks.back());
      chunks.pop_back();
    }
    if (!chunks.empty() && chunks.back().size() > width) {  // a word longer than a line
      Chunk& c = chunks.back();
      const size_t space_left = width - len;  // 0 when the line is full: the word waits
      if (o.break_long_words) {
        size_t end = space_left;
        if (o.break_long_on_hyphens && c.size() > space_left) {
          // Break after the last hyphen that fits, when something else precedes it.
          for (size_t h = std::min(space_left, c.size()); h-- > 1;) {
            if (t.cps[c.begin + h] != '-') continue;
            bool other = false;
            for (size_t k = 0; k < h && !other; ++k) other = t.cps[c.begin + k] != '-';
            if (other) end = h + 1;
            break;
          }
        }
        line.push_back({c.begin, c.begin + end});
        c.begin += end;
      } else if (line.empty()) {
        line.push_back(c);
        chunks.pop_back();
      }
    }
    if (!line.empty() && blank(t, line.back())) line.pop_back();  // no trailing blanks
    if (line.empty()) continue;
    std::string s;
    for (const Chunk& c : line)
      s.append(text.substr(t.off[c.begin], t.off[c.end] - t.off[c.begin]));
    lines.push_back(std::move(s));
  }
  return lines;
}

}  // namespace hearth::chat::py
