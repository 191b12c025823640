#include "sampling/grammar.h"

#include <fmt/format.h>

#include <algorithm>

namespace hearth {

bool Grammar::char_matches(uint32_t pos, uint32_t cp) const {
  return char_intersects(pos, cp, cp);
}

bool Grammar::char_intersects(uint32_t pos, uint32_t lo, uint32_t hi) const {
  const GrammarElement& e = elements_[pos];
  if (e.op == GrammarOp::kChar) return e.a <= hi && lo <= e.b;
  // The set's ranges are sorted and disjoint: the first ending at or after lo decides.
  const auto ranges = char_set(e.a);
  const auto it = std::lower_bound(ranges.begin(), ranges.end(), lo,
                                   [](const CharRange& r, uint32_t v) { return r.hi < v; });
  return it != ranges.end() && it->lo <= hi;
}

namespace {

std::string char_text(uint32_t cp) {
  if (cp == '\\' || cp == '"' || cp == '[' || cp == ']' || cp == '-' || cp == '^')
    return fmt::format("\\{}", static_cast<char>(cp));
  if (cp >= 0x20 && cp < 0x7F) return std::string(1, static_cast<char>(cp));
  if (cp <= 0xFF) return fmt::format("\\x{:02X}", cp);
  if (cp <= 0xFFFF) return fmt::format("\\u{:04X}", cp);
  return fmt::format("\\U{:08X}", cp);
}

std::string range_text(CharRange r) {
  return r.lo == r.hi ? char_text(r.lo) : char_text(r.lo) + "-" + char_text(r.hi);
}

}  // namespace

std::string Grammar::to_string() const {
  std::string out;
  for (uint32_t rule = 0; rule < n_rules(); ++rule) {
    out += rule_names_[rule] + " ::=";
    const auto alts = alternatives(rule);
    for (size_t i = 0; i < alts.size(); ++i) {
      if (i > 0) out += " |";
      for (uint32_t pos = alts[i]; !is_end_op(elements_[pos].op); ++pos) {
        const GrammarElement& e = elements_[pos];
        if (e.op == GrammarOp::kRuleRef) {
          out += " " + rule_names_[e.a];
        } else if (e.op == GrammarOp::kChar) {
          out += " [" + range_text({e.a, e.b}) + "]";
        } else {
          out += " [";
          for (const CharRange& r : char_set(e.a)) out += range_text(r);
          out += "]";
        }
      }
    }
    out += "\n";
  }
  return out;
}

}  // namespace hearth
