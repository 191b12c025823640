// An incremental matcher for a Grammar: feed it text as it is generated (a token's bytes at a
// time), and it says whether the text so far is a prefix the grammar allows and whether it
// may end here.
//
// Use, per generated token:   if (!m.accept_bytes(piece)) ...;   m.can_end() ...
// To try a candidate without committing, copy the matcher (a copy is a few vectors of
// positions, no grammar) and feed the copy; token_trie.h does this for a whole vocabulary.
//
// The state is a bounded set of parse stacks (grammar_stepper.h): identical stacks are
// merged, and an input that would need more than MatcherLimits allows is rejected like a
// character the grammar does not allow, with error() saying which limit it met.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "sampling/grammar.h"
#include "sampling/grammar_stepper.h"

namespace hearth {

class GrammarMatcher {
 public:
  explicit GrammarMatcher(std::shared_ptr<const Grammar> grammar, const MatcherLimits& limits = {});

  // Feeds UTF-8 bytes; a character may be split across calls (its first bytes wait for the
  // rest). Returns false when the grammar rejects them (or they are not UTF-8, or a limit is
  // met): the matcher is then dead and error() says why. A dead matcher rejects everything.
  bool accept_bytes(std::string_view utf8);

  // The text so far is a whole match of the root (and no character is left half-done).
  bool can_end() const { return state_.can_end(); }
  // No continuation of the text can match.
  bool dead() const { return state_.dead(); }
  // Why the matcher died; empty while it is alive.
  const std::string& error() const { return error_; }

  size_t n_stacks() const { return state_.n_stacks(); }
  // Bytes accepted so far.
  uint64_t n_bytes() const { return n_bytes_; }
  // Back to the state before any input.
  void reset();

  const Grammar& grammar() const { return *grammar_; }
  const std::shared_ptr<const Grammar>& grammar_ptr() const { return grammar_; }
  const MatcherLimits& limits() const { return limits_; }
  const GrammarState& state() const { return state_; }

 private:
  void die(StepStatus status, uint8_t byte);

  std::shared_ptr<const Grammar> grammar_;
  MatcherLimits limits_;
  GrammarState state_;
  std::string error_;
  uint64_t n_bytes_ = 0;
};

}  // namespace hearth
