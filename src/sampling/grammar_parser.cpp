// GBNF text to Grammar: a recursive-descent parser whose depth is bounded by the nesting
// limit; the rule table, repetitions and checks are the compiler's (grammar_compiler.h).
#include <fmt/format.h>

#include "sampling/grammar.h"
#include "sampling/grammar_compiler.h"
#include "util/error.h"

namespace hearth {
namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

using Elements = std::vector<GrammarElement>;

class Parser {
 public:
  Parser(std::string_view text, const GrammarLimits& limits) : text_(text), c_(text, limits) {}

  Grammar run() {
    if (text_.size() > c_.limits().max_text_bytes)
      fail("grammar: {} bytes, more than the limit of {}", text_.size(),
           c_.limits().max_text_bytes);
    skip_space(true);
    while (!at_end()) {
      parse_rule();
      skip_space(true);
    }
    return c_.finish();
  }

 private:
  bool at_end() const { return pos_ >= text_.size(); }
  bool at(char c) const { return pos_ < text_.size() && text_[pos_] == c; }
  [[noreturn]] void fail_here(std::string_view what) const { c_.fail_at(pos_, what); }

  // Spaces, tabs and comments; line ends too where `newlines` (inside parentheses, after
  // `::=` and `|`, between rules).
  void skip_space(bool newlines) {
    while (!at_end()) {
      const char c = text_[pos_];
      if (c == ' ' || c == '\t' || (newlines && (c == '\n' || c == '\r'))) {
        ++pos_;
      } else if (c == '#') {
        while (!at_end() && text_[pos_] != '\n' && text_[pos_] != '\r') ++pos_;
      } else {
        break;
      }
    }
  }

  std::string_view parse_name() {
    const size_t begin = pos_;
    while (!at_end() && is_name_char(text_[pos_])) ++pos_;
    return text_.substr(begin, pos_ - begin);
  }

  void parse_rule() {
    const size_t name_at = pos_;
    const std::string_view name = parse_name();
    if (name.empty()) fail_here("expected a rule name");
    skip_space(false);
    if (text_.substr(pos_, 3) != "::=") fail_here("expected '::='");
    pos_ += 3;
    skip_space(true);
    const uint32_t rule = c_.rule(name, name_at);
    Elements body;
    parse_alternatives(rule, body, 0, false);
    if (!at_end() && !at('\n') && !at('\r'))
      fail_here("expected an item, '|' or the end of the line");
    c_.define(rule, std::move(body), name_at);
  }

  // Sequences separated by '|', appended to `out` with kAlt between and kEnd after.
  void parse_alternatives(uint32_t rule, Elements& out, size_t depth, bool nested) {
    parse_sequence(rule, out, depth, nested);
    while (at('|')) {
      ++pos_;
      c_.grow(1, pos_);
      out.push_back({GrammarOp::kAlt, 0, 0});
      skip_space(true);
      parse_sequence(rule, out, depth, nested);
    }
    c_.grow(1, pos_);
    out.push_back({GrammarOp::kEnd, 0, 0});
  }

  void parse_sequence(uint32_t rule, Elements& out, size_t depth, bool nested) {
    std::optional<size_t> item;  // where in `out` the last item starts, for a repetition
    while (!at_end()) {
      const size_t start = pos_;
      const char c = text_[pos_];
      if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (!item) fail_here(fmt::format("expected an item before '{}'", c));
        c_.repeat(out, *item, parse_repetition(nested), rule, start);
      } else if (c == '"' || c == '[' || c == '.' || c == '(' || is_name_char(c)) {
        item = out.size();
        parse_item(rule, out, depth);
      } else {
        break;
      }
      skip_space(nested);
    }
  }

  void parse_item(uint32_t rule, Elements& out, size_t depth) {
    const size_t start = pos_;
    const char c = text_[pos_];
    if (c == '"') return parse_literal(out);
    if (c == '[') return parse_class(out);
    if (c == '(') return parse_group(rule, out, depth + 1);
    c_.grow(1, start);
    if (c == '.') {
      ++pos_;
      out.push_back({GrammarOp::kChar, 0, kMaxCodePoint});
      return;
    }
    const uint32_t ref = c_.rule(parse_name(), start);
    c_.note_reference(ref, start);
    out.push_back({GrammarOp::kRuleRef, ref, 0});
  }

  void parse_literal(Elements& out) {
    ++pos_;  // the opening quote
    while (!at('"')) {
      if (at_end()) fail_here("expected '\"' to close the string");
      const size_t start = pos_;
      const uint32_t cp = parse_char();
      c_.grow(1, start);
      out.push_back({GrammarOp::kChar, cp, cp});
    }
    ++pos_;
  }

  void parse_class(Elements& out) {
    const size_t start = pos_++;
    const bool negated = at('^');
    if (negated) ++pos_;
    std::vector<CharRange> ranges;
    while (!at(']')) {
      if (at_end()) fail_here("expected ']'");
      const size_t range_at = pos_;
      const uint32_t lo = parse_char();
      uint32_t hi = lo;
      // '-' makes a range unless it is the class's last character.
      if (at('-') && pos_ + 1 < text_.size() && text_[pos_ + 1] != ']') {
        ++pos_;
        hi = parse_char();
        if (hi < lo) c_.fail_at(range_at, "a range whose end is before its start");
      }
      ranges.push_back({lo, hi});
    }
    ++pos_;
    c_.grow(1, start);
    out.push_back(c_.char_class(std::move(ranges), negated));
  }

  void parse_group(uint32_t rule, Elements& out, size_t depth) {
    const size_t open = pos_++;
    if (depth > c_.limits().max_nesting)
      c_.fail_at(open, fmt::format("parentheses nested deeper than {}", c_.limits().max_nesting));
    skip_space(true);
    Elements body;
    parse_alternatives(rule, body, depth, true);
    if (!at(')')) fail_here("expected ')'");
    ++pos_;
    bool one_alternative = true;
    for (const GrammarElement& e : body) one_alternative &= e.op != GrammarOp::kAlt;
    if (one_alternative) {  // a plain sequence: inline it, no rule needed
      out.insert(out.end(), body.begin(), body.end() - 1);
      return;
    }
    const uint32_t group = c_.helper_rule(rule, open);
    c_.define(group, std::move(body), open);
    c_.grow(1, open);
    out.push_back({GrammarOp::kRuleRef, group, 0});
  }

  Repetition parse_repetition(bool nested) {
    const char c = text_[pos_++];
    if (c == '*') return {0, std::nullopt};
    if (c == '+') return {1, std::nullopt};
    if (c == '?') return {0, 1};
    const size_t open = pos_ - 1;
    skip_space(nested);
    Repetition rep;
    rep.min = parse_count();
    skip_space(nested);
    if (at('}')) {
      ++pos_;
      rep.max = rep.min;
      return rep;
    }
    if (!at(',')) fail_here("expected ',' or '}'");
    ++pos_;
    skip_space(nested);
    if (!at('}')) {
      rep.max = parse_count();
      skip_space(nested);
      if (!at('}')) fail_here("expected '}'");
      if (*rep.max < rep.min)
        c_.fail_at(open, fmt::format("repetition {{{},{}}}: the maximum is below the minimum",
                                     rep.min, *rep.max));
    }
    ++pos_;
    return rep;
  }

  uint32_t parse_count() {
    if (at_end() || !is_digit(text_[pos_])) fail_here("expected a number");
    const size_t start = pos_;
    uint64_t value = 0;
    while (!at_end() && is_digit(text_[pos_])) {
      value = value * 10 + static_cast<uint64_t>(text_[pos_++] - '0');
      if (value > c_.limits().max_repeat)
        c_.fail_at(start,
                   fmt::format("a repetition count above the limit of {}", c_.limits().max_repeat));
    }
    return static_cast<uint32_t>(value);
  }

  uint32_t parse_char();
  uint32_t parse_escape();
  uint32_t parse_utf8();

  std::string_view text_;
  GrammarCompiler c_;
  size_t pos_ = 0;
};

// One character of a literal or class: an escape or one UTF-8 encoded character.
uint32_t Parser::parse_char() {
  if (at('\\')) return parse_escape();
  return parse_utf8();
}

uint32_t Parser::parse_escape() {
  const size_t start = pos_++;
  if (at_end()) fail_here("expected an escape after '\\'");
  const char c = text_[pos_++];
  int digits = 0;
  switch (c) {
    case 'n':
      return '\n';
    case 'r':
      return '\r';
    case 't':
      return '\t';
    case '\\':
    case '"':
    case '[':
    case ']':
      return static_cast<uint32_t>(c);
    case 'x':
      digits = 2;
      break;
    case 'u':
      digits = 4;
      break;
    case 'U':
      digits = 8;
      break;
    default:
      c_.fail_at(start, fmt::format("unknown escape '\\{}'", c));
  }
  uint64_t value = 0;
  for (int i = 0; i < digits; ++i) {
    const int d = at_end() ? -1 : hex_value(text_[pos_]);
    if (d < 0) fail_here(fmt::format("expected {} hex digits after '\\{}'", digits, c));
    value = value * 16 + static_cast<uint64_t>(d);
    ++pos_;
  }
  if (value > kMaxCodePoint) c_.fail_at(start, "a code point above U+10FFFF");
  return static_cast<uint32_t>(value);
}

uint32_t Parser::parse_utf8() {
  const auto lead = static_cast<unsigned char>(text_[pos_]);
  size_t length = 1;
  uint32_t cp = lead;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
    cp = lead & 0x1Fu;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    cp = lead & 0x0Fu;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    cp = lead & 0x07u;
  } else if (lead >= 0x80) {
    fail_here("invalid UTF-8");
  }
  if (text_.size() - pos_ < length) fail_here("invalid UTF-8");
  for (size_t i = 1; i < length; ++i) {
    const auto b = static_cast<unsigned char>(text_[pos_ + i]);
    if ((b & 0xC0) != 0x80) fail_here("invalid UTF-8");
    cp = (cp << 6) | (b & 0x3Fu);
  }
  static constexpr uint32_t kLowest[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kLowest[length] || cp > kMaxCodePoint || (cp >= 0xD800 && cp <= 0xDFFF))
    fail_here("invalid UTF-8");
  pos_ += length;
  return cp;
}

}  // namespace

Grammar Grammar::parse(std::string_view text, const GrammarLimits& limits) {
  return Parser(text, limits).run();
}

}  // namespace hearth
