#include "sampling/schema_regex.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <vector>

#include "sampling/gbnf_text.h"
#include "util/error.h"

namespace hearth::gbnf {
namespace {

constexpr int kMaxGroupDepth = 20;  // each can cost two levels of parentheses in the grammar

// One parsed element: its GBNF text ("" for one that matches only the empty string) and, for a
// single character, its JSON spelling, so that runs of characters become one literal.
struct Atom {
  std::string text;
  std::optional<std::string> json_char;
};

struct Quantifier {
  uint64_t lo = 0;
  std::optional<uint64_t> hi;
};

CpSet digit_set() {
  return {{'0', '9'}};
}
CpSet word_set() {
  return cp_normalize({{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}});
}
CpSet space_set() {  // ECMAScript's \s: WhiteSpace and LineTerminator
  return cp_normalize({{'\t', '\r'},
                       {' ', ' '},
                       {0xA0, 0xA0},
                       {0x1680, 0x1680},
                       {0x2000, 0x200A},
                       {0x2028, 0x2029},
                       {0x202F, 0x202F},
                       {0x205F, 0x205F},
                       {0x3000, 0x3000},
                       {0xFEFF, 0xFEFF}});
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (const std::string& p : parts) {
    if (!out.empty()) out += sep;
    out += p;
  }
  return out;
}

class RegexParser {
 public:
  RegexParser(std::vector<uint32_t> cps, std::string_view where)
      : cps_(std::move(cps)), where_(where) {}

  std::string parse() {
    std::string out = alternation(true);
    if (!at_end()) error("unbalanced ')'");
    return out;
  }

 private:
  bool at_end() const { return pos_ >= cps_.size(); }
  uint32_t peek(size_t ahead = 0) const {
    return pos_ + ahead < cps_.size() ? cps_[pos_ + ahead] : 0xFFFFFFFF;
  }
  uint32_t next() { return cps_[pos_++]; }

  [[noreturn]] void error(std::string_view what) const {
    fail("{}: unsupported pattern: {} (at offset {})", where_, what, pos_);
  }

  std::string alternation(bool top);
  std::string sequence(bool top);
  Atom parse_atom();
  Atom group();
  Atom escape();
  CpSet class_escape(uint32_t c);
  uint32_t char_escape(uint32_t c);
  uint32_t hex_digits(int n);
  CpSet char_class();
  uint32_t class_char(std::optional<CpSet>& set_escape);
  std::optional<Quantifier> quantifier();
  std::optional<Quantifier> braces(bool must);
  uint64_t number();

  std::vector<uint32_t> cps_;
  std::string_view where_;
  size_t pos_ = 0;
  int depth_ = 0;
};

Atom char_atom(uint32_t cp) {
  std::string json;
  if (auto e = json_escape(cp)) {
    json = *e;
  } else {
    append_utf8(json, cp);
  }
  return {literal(json), json};
}

Atom set_atom(const CpSet& s) {
  return {json_char_expr(s), std::nullopt};
}

std::string RegexParser::alternation(bool top) {
  std::vector<std::string> alts;
  bool has_empty = false;
  for (;;) {
    std::string s = sequence(top);
    if (s.empty()) {
      has_empty = true;
    } else {
      alts.push_back(std::move(s));
    }
    if (at_end() || peek() != '|') break;
    next();
  }
  if (alts.empty()) return "";
  if (alts.size() == 1 && !has_empty) return alts[0];
  std::string out = "(";
  out += join(alts, " | ");
  out += has_empty ? ")?" : ")";
  return out;
}

std::string RegexParser::sequence(bool top) {
  std::vector<std::string> parts;
  std::string pending;  // consecutive single characters, as JSON text
  auto flush = [&] {
    if (!pending.empty()) parts.push_back(literal(pending));
    pending.clear();
  };
  const size_t start = pos_;
  while (!at_end() && peek() != '|' && peek() != ')') {
    if (peek() == '^') {
      if (!top || pos_ != start) error("'^' is only supported at the start");
      next();
      continue;
    }
    if (peek() == '$') {
      if (!top || (pos_ + 1 < cps_.size() && cps_[pos_ + 1] != '|'))
        error("'$' is only supported at the end");
      next();
      continue;
    }
    Atom a = parse_atom();
    const std::optional<Quantifier> q = quantifier();
    if (!q && a.json_char) {
      pending += *a.json_char;
      continue;
    }
    flush();
    if (a.text.empty() || (q && q->hi == 0)) continue;
    parts.push_back(q ? atom(a.text) + repeat_suffix(q->lo, q->hi) : a.text);
  }
  flush();
  return join(parts, " ");
}

Atom RegexParser::parse_atom() {
  const uint32_t c = peek();
  switch (c) {
    case '(':
      return group();
    case '[':
      next();
      return set_atom(char_class());
    case '\\':
      next();
      return escape();
    case '.':
      next();
      return set_atom(cp_complement({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}}));
    case '*':
    case '+':
    case '?':
      error("nothing to repeat");
    case '{':
      if (braces(false)) error("nothing to repeat");
      error("a literal '{' must be escaped as \\{");
    default:
      next();
      return char_atom(c);
  }
}

Atom RegexParser::group() {
  next();  // '('
  if (peek() == '?') {
    next();
    if (peek() == ':') {
      next();
    } else if (peek() == '<' && peek(1) != '=' && peek(1) != '!') {
      while (!at_end() && peek() != '>') next();  // a named group: the name does not matter
      if (at_end()) error("unterminated group name");
      next();
    } else {
      error("lookaround and inline flags");
    }
  }
  if (++depth_ > kMaxGroupDepth) error("groups nested deeper than 20");
  std::string inner = alternation(false);
  --depth_;
  if (at_end() || peek() != ')') error("missing ')'");
  next();
  return {inner, std::nullopt};  // sequence() parenthesizes it when a quantifier follows
}

uint32_t RegexParser::hex_digits(int n) {
  uint32_t v = 0;
  for (int i = 0; i < n; ++i) {
    const uint32_t c = at_end() ? 0 : next();
    int d = -1;
    if (c >= '0' && c <= '9') d = static_cast<int>(c - '0');
    if (c >= 'a' && c <= 'f') d = static_cast<int>(c - 'a' + 10);
    if (c >= 'A' && c <= 'F') d = static_cast<int>(c - 'A' + 10);
    if (d < 0) error("a hex escape needs hex digits");
    v = v * 16 + static_cast<uint32_t>(d);
  }
  return v;
}

// \d \D \w \W \s \S as sets; the empty set for any other letter.
CpSet RegexParser::class_escape(uint32_t c) {
  switch (c) {
    case 'd':
      return digit_set();
    case 'D':
      return cp_complement(digit_set());
    case 'w':
      return word_set();
    case 'W':
      return cp_complement(word_set());
    case 's':
      return space_set();
    case 'S':
      return cp_complement(space_set());
    default:
      return {};
  }
}

// A character escape (after the backslash and its letter `c`): the code point it stands for.
uint32_t RegexParser::char_escape(uint32_t c) {
  switch (c) {
    case 'n':
      return '\n';
    case 'r':
      return '\r';
    case 't':
      return '\t';
    case 'f':
      return '\f';
    case 'v':
      return '\v';
    case '0':
      if (peek() >= '0' && peek() <= '9') error("octal escapes");
      return 0;
    case 'x':
      return hex_digits(2);
    case 'u': {
      if (peek() == '{') error("\\u{...} escapes");
      const uint32_t cp = hex_digits(4);
      if (cp >= 0xD800 && cp <= 0xDFFF) error("surrogate escapes");
      return cp;
    }
    default:
      break;
  }
  if (c >= '1' && c <= '9') error("backreferences");
  if (c == 'b' || c == 'B') error("word boundaries");
  if (c == 'p' || c == 'P') error("Unicode property escapes");
  if (c < 0x80 && std::isalnum(static_cast<int>(c))) error("unknown escape");
  return c;  // escaped punctuation (or any non-ASCII character) stands for itself
}

Atom RegexParser::escape() {
  if (at_end()) error("a trailing backslash");
  const uint32_t c = next();
  if (CpSet s = class_escape(c); !s.empty()) return set_atom(s);
  return char_atom(char_escape(c));
}

// One class member: a code point, or (set_escape filled) one of \d \w \s \D \W \S.
uint32_t RegexParser::class_char(std::optional<CpSet>& set_escape) {
  if (at_end()) error("missing ']'");
  const uint32_t c = next();
  if (c != '\\') return c;
  if (at_end()) error("a trailing backslash");
  const uint32_t e = next();
  if (e == 'b') return '\b';  // inside a class, \b is the backspace
  if (e == '-') return '-';
  if (CpSet s = class_escape(e); !s.empty()) {
    set_escape = std::move(s);
    return 0;
  }
  return char_escape(e);
}

CpSet RegexParser::char_class() {  // after '['
  const bool negated = peek() == '^';
  if (negated) next();
  if (peek() == ']') error("an empty class");
  CpSet set;
  while (!at_end() && peek() != ']') {
    std::optional<CpSet> lo_set;
    const uint32_t lo = class_char(lo_set);
    if (peek() == '-' && peek(1) != ']' && pos_ + 1 < cps_.size()) {
      next();
      std::optional<CpSet> hi_set;
      const uint32_t hi = class_char(hi_set);
      if (lo_set || hi_set) error("a range with a class escape as an end");
      if (lo > hi) error("a range out of order");
      set.push_back({lo, hi});
    } else if (lo_set) {
      set = cp_union(set, *lo_set);
    } else {
      set.push_back({lo, lo});
    }
  }
  if (at_end()) error("missing ']'");
  next();
  set = cp_normalize(std::move(set));
  if (negated) set = cp_complement(set);
  if (set.empty()) error("a class that matches nothing");
  return set;
}

uint64_t RegexParser::number() {
  uint64_t v = 0;
  bool any = false;
  while (!at_end() && peek() >= '0' && peek() <= '9') {
    v = std::min<uint64_t>(v * 10 + (next() - '0'), kMaxRepeat + 1);
    any = true;
  }
  if (!any) error("a quantifier needs a number");
  return v;
}

// {m} {m,} {m,n} at pos_. With must == false, only tells whether one is there (pos_ kept).
std::optional<Quantifier> RegexParser::braces(bool must) {
  size_t k = pos_ + 1;
  auto digits = [&] {
    const size_t s = k;
    while (k < cps_.size() && cps_[k] >= '0' && cps_[k] <= '9') ++k;
    return k > s;
  };
  bool ok = digits();
  if (ok && k < cps_.size() && cps_[k] == ',') {
    ++k;
    digits();
  }
  ok = ok && k < cps_.size() && cps_[k] == '}';
  if (!ok || !must) return ok ? std::optional(Quantifier{}) : std::nullopt;
  next();
  Quantifier q;
  q.lo = number();
  q.hi = q.lo;
  if (peek() == ',') {
    next();
    q.hi = peek() == '}' ? std::nullopt : std::optional(number());
  }
  next();  // '}'
  if (q.lo > kMaxRepeat || (q.hi && *q.hi > kMaxRepeat)) error("a repetition count over 10000");
  if (q.hi && *q.hi < q.lo) error("a quantifier {m,n} with n < m");
  return q;
}

std::optional<Quantifier> RegexParser::quantifier() {
  std::optional<Quantifier> q;
  switch (peek()) {
    case '*':
      next();
      q = Quantifier{0, std::nullopt};
      break;
    case '+':
      next();
      q = Quantifier{1, std::nullopt};
      break;
    case '?':
      next();
      q = Quantifier{0, 1};
      break;
    case '{':
      if (!braces(false)) return std::nullopt;
      q = braces(true);
      break;
    default:
      return std::nullopt;
  }
  if (peek() == '?') next();  // lazy: the same strings match as a whole
  if (peek() == '*' || peek() == '+' || peek() == '?' || (peek() == '{' && braces(false)))
    error("nothing to repeat");
  return q;
}

}  // namespace

std::string pattern_to_gbnf(std::string_view pattern, std::string_view where) {
  std::optional<std::vector<uint32_t>> cps = decode_utf8(pattern);
  if (!cps) fail("{}: the pattern is not valid UTF-8", where);
  return RegexParser(std::move(*cps), where).parse();
}

}  // namespace hearth::gbnf
