#include "sampling/grammar_compiler.h"

#include <algorithm>

#include "util/error.h"

namespace hearth {

GrammarCompiler::GrammarCompiler(std::string_view text, const GrammarLimits& limits)
    : text_(text), limits_(limits) {}

std::string GrammarCompiler::position(size_t offset) const {
  offset = std::min(offset, text_.size());
  size_t line = 1, column = 1;
  for (size_t i = 0; i < offset; ++i) {
    const auto c = static_cast<unsigned char>(text_[i]);
    if (c == '\n') {
      ++line;
      column = 1;
    } else if ((c & 0xC0) != 0x80) {  // count characters, not UTF-8 continuation bytes
      ++column;
    }
  }
  return fmt::format("{}:{}", line, column);
}

void GrammarCompiler::fail_at(size_t offset, std::string_view what) const {
  fail("grammar {}: {}", position(offset), what);
}

uint32_t GrammarCompiler::rule(std::string_view name, size_t offset) {
  const auto it = by_name_.find(std::string(name));
  if (it != by_name_.end()) return it->second;
  if (rules_.size() >= limits_.max_rules)
    fail_at(offset, fmt::format("more than {} rules (groups and repetitions count as rules)",
                                limits_.max_rules));
  const auto id = static_cast<uint32_t>(rules_.size());
  rules_.push_back({.name = std::string(name)});
  by_name_.emplace(name, id);
  return id;
}

void GrammarCompiler::note_reference(uint32_t rule, size_t offset) {
  if (!rules_[rule].first_ref) rules_[rule].first_ref = offset;
}

uint32_t GrammarCompiler::helper_rule(uint32_t parent, size_t offset) {
  // '.' cannot appear in a written name, so a generated name never meets a user's.
  const std::string name = fmt::format("{}.{}", rules_[parent].name, ++n_helpers_);
  return rule(name, offset);
}

void GrammarCompiler::define(uint32_t rule, std::vector<GrammarElement> body, size_t offset) {
  RuleInfo& r = rules_[rule];
  if (r.defined)
    fail_at(offset, fmt::format("rule '{}' is defined twice (first at {})", r.name,
                                position(r.def_offset)));
  r.body = std::move(body);
  r.defined = true;
  r.def_offset = offset;
}

GrammarElement GrammarCompiler::char_class(std::vector<CharRange> ranges, bool negated) {
  std::sort(ranges.begin(), ranges.end(),
            [](const CharRange& a, const CharRange& b) { return a.lo < b.lo; });
  std::vector<CharRange> merged;  // sorted, disjoint, not even adjacent
  for (const CharRange& r : ranges) {
    if (!merged.empty() && r.lo <= merged.back().hi + 1)
      merged.back().hi = std::max(merged.back().hi, r.hi);
    else
      merged.push_back(r);
  }
  if (negated) {
    std::vector<CharRange> complement;
    uint32_t next = 0;  // the lowest code point not yet covered
    for (const CharRange& r : merged) {
      if (r.lo > next) complement.push_back({next, r.lo - 1});
      next = r.hi + 1;
    }
    if (next <= kMaxCodePoint) complement.push_back({next, kMaxCodePoint});
    merged = std::move(complement);
  }
  if (merged.size() == 1) return {GrammarOp::kChar, merged[0].lo, merged[0].hi};
  const auto [it, added] = set_ids_.emplace(merged, static_cast<uint32_t>(sets_.size()));
  if (added) sets_.push_back(std::move(merged));
  return {GrammarOp::kCharSet, it->second, 0};
}

void GrammarCompiler::grow(size_t n, size_t offset) {
  if (n > limits_.max_elements - std::min(n_elements_, limits_.max_elements))
    fail_at(offset, fmt::format("the grammar grows past {} elements once repetitions are "
                                "expanded",
                                limits_.max_elements));
  n_elements_ += n;
}

void GrammarCompiler::repeat(std::vector<GrammarElement>& seq, size_t item_begin,
                             const Repetition& rep, uint32_t parent, size_t offset) {
  const std::vector<GrammarElement> item(seq.begin() + static_cast<ptrdiff_t>(item_begin),
                                         seq.end());
  seq.resize(item_begin);
  grow(item.size() * rep.min, offset);
  for (uint32_t i = 0; i < rep.min; ++i) seq.insert(seq.end(), item.begin(), item.end());
  const auto ref = [](uint32_t rule) { return GrammarElement{GrammarOp::kRuleRef, rule, 0}; };
  const GrammarElement alt{GrammarOp::kAlt, 0, 0}, end{GrammarOp::kEnd, 0, 0};

  if (!rep.max) {  // R ::= item R | (empty)
    const uint32_t loop = helper_rule(parent, offset);
    std::vector<GrammarElement> body = item;
    body.insert(body.end(), {ref(loop), alt, end});
    grow(body.size() + 1, offset);
    define(loop, std::move(body), offset);
    seq.push_back(ref(loop));
    return;
  }
  const uint32_t optional = *rep.max - rep.min;
  if (optional == 0) return;
  if (rules_.size() + optional > limits_.max_rules)
    fail_at(offset, fmt::format("this repetition needs {} rules, more than the limit of {} in all",
                                optional, limits_.max_rules));
  grow(static_cast<size_t>(optional) * (item.size() + 3), offset);
  uint32_t inner = 0;                         // T(k-1)
  for (uint32_t k = 1; k <= optional; ++k) {  // Tk ::= item T(k-1) | (empty)
    const uint32_t t = helper_rule(parent, offset);
    std::vector<GrammarElement> body = item;
    if (k > 1) body.push_back(ref(inner));
    body.insert(body.end(), {alt, end});
    define(t, std::move(body), offset);
    inner = t;
  }
  seq.push_back(ref(inner));
}

Grammar GrammarCompiler::finish() {
  check_defined();
  const auto root = by_name_.find("root");
  if (root == by_name_.end()) fail("grammar: no rule named 'root'");
  check_left_recursion();
  drop_dead_alternatives(root->second);

  Grammar g;
  g.root_ = root->second;
  g.alt_begin_.push_back(0);
  for (RuleInfo& r : rules_) {
    const auto base = static_cast<uint32_t>(g.elements_.size());
    g.alt_starts_.push_back(base);
    for (size_t i = 0; i + 1 < r.body.size(); ++i)
      if (r.body[i].op == GrammarOp::kAlt)
        g.alt_starts_.push_back(base + static_cast<uint32_t>(i) + 1);
    g.alt_begin_.push_back(static_cast<uint32_t>(g.alt_starts_.size()));
    g.elements_.insert(g.elements_.end(), r.body.begin(), r.body.end());
    g.rule_names_.push_back(std::move(r.name));
  }
  g.set_begin_.push_back(0);
  for (const auto& set : sets_) {
    g.set_ranges_.insert(g.set_ranges_.end(), set.begin(), set.end());
    g.set_begin_.push_back(static_cast<uint32_t>(g.set_ranges_.size()));
  }
  return g;
}

}  // namespace hearth
