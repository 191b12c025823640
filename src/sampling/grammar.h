// A compiled GBNF grammar (the grammar language of llama.cpp / llama-server), the form the
// matcher (grammar_matcher.h) walks: rules as sequences of elements over Unicode code points.
//
// Syntax accepted by Grammar::parse:
//   name ::= alternatives           one rule per line; names are [a-zA-Z0-9-]+; `root` required
//   a b c                           a sequence;  a | b  alternatives
//   "text"                          a literal, escapes \n \r \t \\ \" \[ \] \xHH \uHHHH \UHHHHHHHH
//   [a-z0-9_]  [^"\\]               a character class (negated with ^), same escapes inside
//   .                               any character
//   ( ... )                         a group; newlines are allowed inside, and after `::=` and `|`
//   x*  x+  x?  x{m}  x{m,}  x{m,n} repetition of the item before it
//   # comment                       to the end of the line
//
// Compiled form: all rules' elements in one array. A rule is its alternatives, each a run of
// kChar / kCharSet / kRuleRef elements, separated by kAlt, the last ended by kEnd. Groups with
// several alternatives and repetitions become generated rules named `<rule>.<n>`:
//   x{m,n} = x copied m times, then T(n-m) where T1 ::= x | (empty), Tk ::= x T(k-1) | (empty)
//   x{m,}  = x copied m times, then R where R ::= x R | (empty)
//
// A grammar that parses is safe to match: every rule is defined, none can reach itself without
// consuming a character (left recursion, which would expand without end), and its size is
// bounded by GrammarLimits. Errors are hearth::Error: "grammar <line>:<column>: <what>" (the
// column counts characters from 1), or "grammar: <what>" when no position applies.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hearth {

inline constexpr uint32_t kMaxCodePoint = 0x10FFFF;

// An inclusive range of code points.
struct CharRange {
  uint32_t lo = 0;
  uint32_t hi = 0;
  auto operator<=>(const CharRange&) const = default;
};

enum class GrammarOp : uint8_t {
  kEnd,      // ends the rule's last alternative
  kAlt,      // ends an alternative that another follows
  kRuleRef,  // a = the rule referenced
  kChar,     // one code point in [a, b]
  kCharSet,  // one code point in char_set(a), a class of several ranges (or none)
};

struct GrammarElement {
  GrammarOp op = GrammarOp::kEnd;
  uint32_t a = 0;
  uint32_t b = 0;
  bool operator==(const GrammarElement&) const = default;
};

inline bool is_char_op(GrammarOp op) {
  return op == GrammarOp::kChar || op == GrammarOp::kCharSet;
}
inline bool is_end_op(GrammarOp op) {
  return op == GrammarOp::kEnd || op == GrammarOp::kAlt;
}

// Bounds on what a grammar may cost; a grammar past one is rejected at parse time.
struct GrammarLimits {
  size_t max_text_bytes = 256 * 1024;
  // After groups and repetitions became rules: x{0,n} takes n of them, and a JSON Schema's
  // maxLength 10000 (the largest count) must fit beside the rest.
  size_t max_rules = 32768;
  size_t max_nesting = 64;        // depth of parentheses
  uint32_t max_repeat = 10000;    // a bound in x{m,n}
  size_t max_elements = 1 << 20;  // all rules' elements together, after rewriting
};

class Grammar {
 public:
  // Throws hearth::Error (see the top of this file).
  static Grammar parse(std::string_view text, const GrammarLimits& limits = {});

  uint32_t root() const { return root_; }
  uint32_t n_rules() const { return static_cast<uint32_t>(rule_names_.size()); }
  const std::string& rule_name(uint32_t rule) const { return rule_names_[rule]; }
  // Positions (indices into elements()) where the rule's alternatives start.
  std::span<const uint32_t> alternatives(uint32_t rule) const {
    return std::span(alt_starts_)
        .subspan(alt_begin_[rule], alt_begin_[rule + 1] - alt_begin_[rule]);
  }
  std::span<const GrammarElement> elements() const { return elements_; }
  const GrammarElement& at(uint32_t pos) const { return elements_[pos]; }
  std::span<const CharRange> char_set(uint32_t id) const {
    return std::span(set_ranges_).subspan(set_begin_[id], set_begin_[id + 1] - set_begin_[id]);
  }

  // Whether the char element at `pos` (kChar or kCharSet) accepts code point cp.
  bool char_matches(uint32_t pos, uint32_t cp) const;
  // Whether it accepts some code point in [lo, hi].
  bool char_intersects(uint32_t pos, uint32_t lo, uint32_t hi) const;

  // The compiled rules in GBNF, one a line (generated rules included), for tests and logs.
  std::string to_string() const;

 private:
  friend class GrammarCompiler;
  Grammar() = default;

  std::vector<GrammarElement> elements_;
  std::vector<std::string> rule_names_;
  std::vector<uint32_t> alt_starts_;  // every rule's alternatives' first positions
  std::vector<uint32_t> alt_begin_;   // rule r's are alt_starts_[alt_begin_[r] .. [r + 1])
  std::vector<CharRange> set_ranges_;
  std::vector<uint32_t> set_begin_;  // set s is set_ranges_[set_begin_[s] .. [s + 1])
  uint32_t root_ = 0;
};

}  // namespace hearth
