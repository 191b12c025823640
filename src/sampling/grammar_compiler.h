// The back end of Grammar::parse: the rule table (a name may be referenced before its
// definition), character classes, the rewriting of repetitions into rules, the size limits,
// and the final checks (undefined rules, `root`, left recursion) that make a Grammar safe to
// match. The parser (grammar_parser.cpp) drives it; nothing else should.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sampling/grammar.h"

namespace hearth {

struct Repetition {
  uint32_t min = 0;
  std::optional<uint32_t> max;  // unset: no upper bound
};

class GrammarCompiler {
 public:
  GrammarCompiler(std::string_view text, const GrammarLimits& limits);

  const GrammarLimits& limits() const { return limits_; }
  // Throws "grammar <line>:<column>: <what>" for a byte offset into the text.
  [[noreturn]] void fail_at(size_t offset, std::string_view what) const;

  // The rule named `name`, created when first seen (offset: where, for the rule-count error).
  uint32_t rule(std::string_view name, size_t offset);
  void note_reference(uint32_t rule, size_t offset);
  // A new rule for a group or a repetition inside `parent`, written at `offset`.
  uint32_t helper_rule(uint32_t parent, size_t offset);
  // Sets a rule's body: alternatives separated by kAlt, the last ended by kEnd.
  void define(uint32_t rule, std::vector<GrammarElement> body, size_t offset);

  // One element for a class: `ranges` in any order (overlaps allowed), or their complement.
  GrammarElement char_class(std::vector<CharRange> ranges, bool negated);
  // Counts n new elements against limits().max_elements.
  void grow(size_t n, size_t offset);
  // Replaces the item seq[item_begin ..] by its repetition (see grammar.h for the form).
  void repeat(std::vector<GrammarElement>& seq, size_t item_begin, const Repetition& rep,
              uint32_t parent, size_t offset);

  // Runs the checks and returns the flat form.
  Grammar finish();

 private:
  struct RuleInfo {
    std::string name;
    std::vector<GrammarElement> body;
    bool defined = false;
    size_t def_offset = 0;
    std::optional<size_t> first_ref;
  };

  enum class Match { kEmpty, kSomeText };

  void check_defined() const;
  bool matches_nothing(const GrammarElement& e) const;
  std::vector<bool> rules_matching(Match what) const;
  void check_left_recursion() const;
  void drop_dead_alternatives(uint32_t root);
  std::string position(size_t offset) const;

  std::string_view text_;
  GrammarLimits limits_;
  std::vector<RuleInfo> rules_;
  std::unordered_map<std::string, uint32_t> by_name_;
  std::vector<std::vector<CharRange>> sets_;
  std::map<std::vector<CharRange>, uint32_t> set_ids_;
  size_t n_elements_ = 0;
  uint32_t n_helpers_ = 0;
};

}  // namespace hearth
