#include "sampling/gbnf_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <span>

namespace hearth::gbnf {

CpSet cp_normalize(CpSet s) {
  std::sort(s.begin(), s.end(), [](CpRange a, CpRange b) { return a.lo < b.lo; });
  CpSet out;
  for (CpRange r : s) {
    if (r.lo > r.hi) continue;
    if (!out.empty() && r.lo <= out.back().hi + 1) {
      out.back().hi = std::max(out.back().hi, r.hi);
    } else {
      out.push_back(r);
    }
  }
  return out;
}

CpSet cp_union(const CpSet& a, const CpSet& b) {
  CpSet all = a;
  all.insert(all.end(), b.begin(), b.end());
  return cp_normalize(std::move(all));
}

CpSet cp_complement(const CpSet& s) {
  CpSet out;
  uint32_t next = 0;  // the first code point not yet covered
  for (CpRange r : cp_normalize(s)) {
    if (r.lo > next) out.push_back({next, r.lo - 1});
    next = r.hi + 1;
  }
  if (next <= kMaxCodePoint) out.push_back({next, kMaxCodePoint});
  return out;
}

CpSet cp_intersect(const CpSet& a, const CpSet& b) {
  return cp_complement(cp_union(cp_complement(a), cp_complement(b)));
}

bool cp_contains(const CpSet& s, uint32_t cp) {
  return std::any_of(s.begin(), s.end(), [cp](CpRange r) { return r.lo <= cp && cp <= r.hi; });
}

void append_utf8(std::string& out, uint32_t cp) {
  auto byte = [&out](uint32_t b) { out.push_back(static_cast<char>(b)); };
  if (cp < 0x80) {
    byte(cp);
  } else if (cp < 0x800) {
    byte(0xC0 | (cp >> 6));
    byte(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    byte(0xE0 | (cp >> 12));
    byte(0x80 | ((cp >> 6) & 0x3F));
    byte(0x80 | (cp & 0x3F));
  } else {
    byte(0xF0 | (cp >> 18));
    byte(0x80 | ((cp >> 12) & 0x3F));
    byte(0x80 | ((cp >> 6) & 0x3F));
    byte(0x80 | (cp & 0x3F));
  }
}

std::optional<std::vector<uint32_t>> decode_utf8(std::string_view s) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < s.size();) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    size_t n = 0;  // the sequence's length, from its lead byte; 0: not a lead byte
    if (b0 < 0x80) {
      n = 1;
    } else if ((b0 >> 5) == 6) {
      n = 2;
    } else if ((b0 >> 4) == 14) {
      n = 3;
    } else if ((b0 >> 3) == 30) {
      n = 4;
    }
    if (n == 0 || i + n > s.size()) return std::nullopt;
    uint32_t cp = n == 1 ? b0 : b0 & (0x7F >> n);
    for (size_t k = 1; k < n; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if ((b >> 6) != 2) return std::nullopt;
      cp = (cp << 6) | (b & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > kMaxCodePoint || (cp >= 0xD800 && cp <= 0xDFFF)) return std::nullopt;
    out.push_back(cp);
    i += n;
  }
  return out;
}

std::string literal(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    const auto b = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (b < 0x20 || b == 0x7F) {
          out += fmt::format("\\x{:02X}", b);
        } else {
          out.push_back(c);
        }
    }
  }
  return out + "\"";
}

namespace {

// One range endpoint inside [...]: the class's own metacharacters escaped, controls as \xHH.
void append_class_char(std::string& out, uint32_t cp) {
  // '^' and '-' as hex: llama.cpp's parser knows no \^ or \- escape.
  if (cp < 0x20 || cp == 0x7F || cp == '^' || cp == '-') {
    out += fmt::format("\\x{:02X}", cp);
  } else if (cp == ']' || cp == '[' || cp == '\\') {
    out.push_back('\\');
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp <= 0xFFFF) {  // escaped: class ends are often invisible (U+00A0, U+FEFF, ...)
    out += fmt::format("\\u{:04X}", cp);
  } else {
    out += fmt::format("\\U{:08X}", cp);
  }
}

std::string class_body(const CpSet& s) {
  std::string out;
  for (CpRange r : s) {
    append_class_char(out, r.lo);
    if (r.hi == r.lo) continue;
    if (r.hi > r.lo + 1) out.push_back('-');
    append_class_char(out, r.hi);
  }
  return out;
}

}  // namespace

std::string char_class(const CpSet& s) {
  const CpSet n = cp_normalize(s);
  // A set that reaches U+10FFFF is written by what it leaves out: [^"\\\x00-\x1F] rather than
  // a list of ranges ending at the top of the code space.
  const bool negated = !n.empty() && n.back().hi == kMaxCodePoint;
  std::string out = negated ? "[^" : "[";
  out += class_body(negated ? cp_complement(n) : n);
  out += ']';
  return out;
}

std::optional<std::string> json_escape(uint32_t cp) {
  switch (cp) {
    case '"':
      return "\\\"";
    case '\\':
      return "\\\\";
    case '\b':
      return "\\b";
    case '\f':
      return "\\f";
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    default:
      if (cp < 0x20) return fmt::format("\\u{:04x}", cp);
      return std::nullopt;
  }
}

namespace {

// a + b + ...: one allocation, and none of the `"literal" + std::string&&` that GCC 12's
// -Wrestrict misreads.
std::string concat(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (std::string_view p : parts) out += p;
  return out;
}

// One code point of `s` (ASCII) as a literal when it is alone, else a class.
std::string ascii_choice(const CpSet& s) {
  const CpSet n = cp_normalize(s);
  if (n.size() == 1 && n[0].lo == n[0].hi)
    return literal(std::string(1, static_cast<char>(n[0].lo)));
  return char_class(n);
}

// The canonical escapes of the code points of `s` (quotes, backslashes and controls only), as
// one sequence: the backslash, then the letters of the short escapes or "u00" and hex digits.
std::string escapes_expr(const CpSet& s) {
  CpSet letters, low, high;  // after "\"; after "\u000"; after "\u001"
  for (CpRange r : s) {
    for (uint32_t cp = r.lo; cp <= r.hi; ++cp) {
      const std::string e = *json_escape(cp);
      const auto last = static_cast<uint32_t>(static_cast<unsigned char>(e.back()));
      if (e.size() == 2) {
        letters.push_back({last, last});
      } else {
        (cp < 0x10 ? low : high).push_back({last, last});
      }
    }
  }
  std::vector<std::string> tails;
  if (!letters.empty()) tails.push_back(ascii_choice(letters));
  std::vector<std::string> hex;
  if (!low.empty()) hex.push_back(concat({"\"0\" ", ascii_choice(low)}));
  if (!high.empty()) hex.push_back(concat({"\"1\" ", ascii_choice(high)}));
  if (hex.size() == 1) tails.push_back(concat({"\"u00\" ", hex[0]}));
  if (hex.size() == 2) tails.push_back(concat({"\"u00\" ( ", hex[0], " | ", hex[1], " )"}));
  std::string tail = tails[0];
  if (tails.size() == 2) {
    tail = concat({"( ", tails[0], " | ", tails[1], " )"});
  } else if (!is_atom(tail)) {
    tail = concat({"( ", tail, " )"});
  }
  return concat({literal("\\"), " ", tail});
}

}  // namespace

std::string json_char_expr(const CpSet& s) {
  // Characters JSON writes raw: everything but the quote, the backslash and controls.
  static const CpSet kRaw = {{0x20, 0x21}, {0x23, 0x5B}, {0x5D, kMaxCodePoint}};
  const CpSet raw = cp_intersect(s, kRaw);
  const CpSet special = cp_intersect(s, cp_complement(kRaw));
  std::string esc;
  if (special.size() == 1 && special[0].lo == special[0].hi) {
    esc = literal(*json_escape(special[0].lo));
  } else if (!special.empty()) {
    esc = escapes_expr(special);
  }
  if (raw.empty()) return is_atom(esc) ? esc : concat({"(", esc, ")"});
  if (esc.empty()) return char_class(raw);
  return concat({"(", char_class(raw), " | ", esc, ")"});
}

std::string repeat_suffix(uint64_t lo, std::optional<uint64_t> hi) {
  if (!hi) {
    if (lo == 0) return "*";
    if (lo == 1) return "+";
    return fmt::format("{{{},}}", lo);
  }
  if (lo == 1 && *hi == 1) return "";
  if (lo == 0 && *hi == 1) return "?";
  if (lo == *hi) return fmt::format("{{{}}}", lo);
  return fmt::format("{{{},{}}}", lo, *hi);
}

namespace {

// The end of the element starting at `i` (a name, literal, class or group), or npos.
size_t element_end(std::string_view e, size_t i) {
  if (i >= e.size()) return std::string_view::npos;
  const char c = e[i];
  if (c == '"' || c == '[') {
    const char close = c == '"' ? '"' : ']';
    for (size_t k = i + 1; k < e.size(); ++k) {
      if (e[k] == '\\') {
        ++k;
      } else if (e[k] == close) {
        return k + 1;
      }
    }
    return std::string_view::npos;
  }
  if (c == '(') {
    int open = 0;
    for (size_t k = i; k < e.size();) {
      if (e[k] == '"' || e[k] == '[') {
        k = element_end(e, k);
        if (k == std::string_view::npos) return k;
        continue;
      }
      if (e[k] == '(') ++open;
      if (e[k] == ')' && --open == 0) return k + 1;
      ++k;
    }
    return std::string_view::npos;
  }
  size_t k = i;
  while (k < e.size() && (std::isalnum(static_cast<unsigned char>(e[k])) || e[k] == '-')) ++k;
  return k == i ? std::string_view::npos : k;
}

}  // namespace

bool is_atom(std::string_view expr) {
  return element_end(expr, 0) == expr.size();
}

std::string atom(const std::string& expr) {
  return is_atom(expr) ? expr : "(" + expr + ")";
}

namespace {

constexpr size_t kFlatTexts = 16;  // texts written as one flat alternation
constexpr int kMaxTrieDepth = 8;   // nested groups (GrammarLimits::max_nesting is 64)

size_t utf8_length(unsigned char lead) {
  return lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
}

// `texts` (sorted, all sharing their first `at` bytes) from byte `at` on.
std::string trie_group(std::span<const std::string> texts, size_t at, int depth) {
  std::vector<std::string> alts;
  if (texts.size() <= kFlatTexts || depth >= kMaxTrieDepth) {
    for (const std::string& t : texts) alts.push_back(literal(std::string_view(t).substr(at)));
  } else {
    // Sorted: what the first and the last share, all share; cut at a character boundary.
    const std::string &first = texts.front(), &last = texts.back();
    size_t common = at;
    while (common < first.size() && common < last.size() && first[common] == last[common]) ++common;
    while (common > at && common < first.size() &&
           (static_cast<unsigned char>(first[common]) & 0xC0) == 0x80)
      --common;
    if (common > at) {
      return literal(std::string_view(first).substr(at, common - at)) + " " +
             trie_group(texts, common, depth);
    }
    // Split by the next character: the text that ends here (at most one), then each group.
    size_t i = 0;
    if (texts[0].size() == at) alts.push_back(literal("")), ++i;
    while (i < texts.size()) {
      const size_t len = utf8_length(static_cast<unsigned char>(texts[i][at]));
      const std::string_view head = std::string_view(texts[i]).substr(at, len);
      size_t j = i + 1;
      while (j < texts.size() && std::string_view(texts[j]).substr(at, len) == head) ++j;
      alts.push_back(j - i == 1 ? literal(std::string_view(texts[i]).substr(at))
                                : trie_group(texts.subspan(i, j - i), at, depth + 1));
      i = j;
    }
  }
  if (alts.size() == 1) return atom(alts[0]);
  std::string out = "(";
  for (size_t k = 0; k < alts.size(); ++k) out += (k ? " | " : "") + alts[k];
  return out + ")";
}

}  // namespace

std::string literal_alternatives(std::vector<std::string> texts) {
  if (texts.size() <= kFlatTexts) {  // as given: a | b | c
    std::string out;
    for (size_t i = 0; i < texts.size(); ++i)
      if (std::find(texts.begin(), texts.begin() + static_cast<ptrdiff_t>(i), texts[i]) ==
          texts.begin() + static_cast<ptrdiff_t>(i))
        out += (out.empty() ? "" : " | ") + literal(texts[i]);
    return out;
  }
  std::sort(texts.begin(), texts.end());
  texts.erase(std::unique(texts.begin(), texts.end()), texts.end());
  return trie_group(texts, 0, 0);
}

}  // namespace hearth::gbnf
