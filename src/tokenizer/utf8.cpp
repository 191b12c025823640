#include "tokenizer/utf8.h"

namespace hearth {

namespace {

// What a byte may start: `n_cont` continuation bytes follow, the first of them in [lo, hi]
// (Unicode table 3-7, which excludes overlongs, surrogates and values above U+10FFFF).
struct Lead {
  int n_cont;  // -1: the byte cannot start a sequence
  uint8_t lo;
  uint8_t hi;
};

constexpr Lead lead_of(uint8_t b) {
  if (b < 0x80) return {0, 0, 0};
  if (b < 0xC2) return {-1, 0, 0};  // continuation byte, or C0/C1 (always overlong)
  if (b < 0xE0) return {1, 0x80, 0xBF};
  if (b == 0xE0) return {2, 0xA0, 0xBF};
  if (b == 0xED) return {2, 0x80, 0x9F};
  if (b < 0xF0) return {2, 0x80, 0xBF};
  if (b == 0xF0) return {3, 0x90, 0xBF};
  if (b < 0xF4) return {3, 0x80, 0xBF};
  if (b == 0xF4) return {3, 0x80, 0x8F};
  return {-1, 0, 0};
}

enum class Scan { Complete, Invalid, Truncated };

// Examines the sequence starting at in[i] (in[i] >= 0x80). `len` receives the length of the
// complete sequence (Complete), of the maximal subpart to replace (Invalid), or of the valid
// prefix that runs to the end of `in` (Truncated).
Scan scan_sequence(std::string_view in, size_t i, size_t& len) {
  const Lead lead = lead_of(static_cast<uint8_t>(in[i]));
  if (lead.n_cont < 0) {
    len = 1;
    return Scan::Invalid;
  }
  size_t k = 1;
  for (; k <= static_cast<size_t>(lead.n_cont); ++k) {
    if (i + k >= in.size()) {
      len = k;
      return Scan::Truncated;
    }
    const uint8_t c = static_cast<uint8_t>(in[i + k]);
    const uint8_t lo = k == 1 ? lead.lo : 0x80;
    const uint8_t hi = k == 1 ? lead.hi : 0xBF;
    if (c < lo || c > hi) {
      len = k;
      return Scan::Invalid;
    }
  }
  len = k;
  return Scan::Complete;
}

}  // namespace

size_t utf8_char_len(std::string_view s, size_t i) {
  if (static_cast<uint8_t>(s[i]) < 0x80) return 1;
  size_t len = 0;
  return scan_sequence(s, i, len) == Scan::Complete ? len : 0;
}

size_t utf8_sanitize_append(std::string_view in, std::string& out, bool final) {
  size_t i = 0;
  const size_t n = in.size();
  while (i < n) {
    if (static_cast<uint8_t>(in[i]) < 0x80) {
      size_t j = i + 1;
      while (j < n && static_cast<uint8_t>(in[j]) < 0x80) ++j;
      out.append(in.data() + i, j - i);
      i = j;
      continue;
    }
    size_t len = 0;
    switch (scan_sequence(in, i, len)) {
      case Scan::Complete:
        out.append(in.data() + i, len);
        break;
      case Scan::Invalid:
        out.append(kReplacementChar);
        break;
      case Scan::Truncated:
        if (!final) return i;
        out.append(kReplacementChar);
        break;
    }
    i += len;
  }
  return n;
}

std::string utf8_sanitize(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  utf8_sanitize_append(in, out, /*final=*/true);
  return out;
}

bool utf8_is_valid(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    if (static_cast<uint8_t>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    size_t len = 0;
    if (scan_sequence(s, i, len) != Scan::Complete) return false;
    i += len;
  }
  return true;
}

}  // namespace hearth
