// Which tokens of a vocabulary a grammar allows next: the mask for constrained sampling.
//
// fill() walks the TokenTrie depth first, advancing the matcher's state byte by byte and
// skipping every subtree whose prefix the grammar rejects, so its cost follows the part of
// the vocabulary the grammar admits rather than the vocabulary's size. token_allowed() checks
// one token, for "sample first, check that token, mask only if it fails".
//
// Both share a cache of the transitions computed so far: states are interned (equal sets of
// stacks get one id) and a step from (state, character) is computed once, then looked up.
// Inside a JSON string, for instance, almost every character leads back to the same state,
// so a walk over the whole vocabulary costs about one table lookup per trie node. The cache
// outlives a call (it stays valid while the grammar and the limits are the same) and is
// bounded: past a number of states it is emptied, keeping only what a walk in progress uses.
//
// Not thread-safe: one masker per sequence (or per thread).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "sampling/grammar_matcher.h"
#include "sampling/grammar_stack_set.h"
#include "sampling/grammar_stepper.h"
#include "sampling/token_mask.h"
#include "sampling/token_trie.h"

namespace hearth {

class GrammarMasker {
 public:
  explicit GrammarMasker(std::shared_ptr<const TokenTrie> trie, size_t max_cached_states = 4096);

  // Sets `allowed` to n_tokens bits: a token is allowed when the matcher accepts its whole
  // piece; an end token exactly when matcher.can_end(). Nothing is allowed for a dead matcher.
  void fill(const GrammarMatcher& matcher, TokenMask& allowed);
  // The same answer for one token.
  bool token_allowed(const GrammarMatcher& matcher, int32_t token);

  struct Stats {
    size_t nodes_tried = 0;     // trie nodes whose byte the last fill() tried
    size_t nodes_accepted = 0;  // of which the grammar admitted
    size_t steps_computed = 0;  // transitions not found in the cache (all calls so far)
    size_t cached_states = 0;
    bool mask_from_cache = false;  // the last fill() reused a whole mask
  };
  Stats stats() const;

  const TokenTrie& trie() const { return *trie_; }

 private:
  // A position of a walk: an interned state, and the bytes of a character begun after it.
  struct Level {
    int32_t state = 0;
    Utf8Partial partial;
  };

  void bind(const GrammarMatcher& matcher);
  void clear_cache();
  int32_t intern(const GrammarState& s);
  Level start_level(const GrammarMatcher& matcher);
  bool advance(const Level& from, uint8_t byte, Level& to);
  int32_t char_step(int32_t state, uint32_t cp);
  void make_room(std::span<Level> live);

  std::shared_ptr<const TokenTrie> trie_;
  size_t max_states_;
  std::shared_ptr<const Grammar> grammar_;  // what the cache belongs to
  MatcherLimits limits_;
  std::optional<GrammarStepper> stepper_;

  std::vector<GrammarState> states_;                  // interned; no pending bytes
  StackSet state_index_;                              // the states' keys, in the same order
  std::vector<int32_t> ascii_next_;                   // [state * 128 + character]
  std::unordered_map<uint64_t, int32_t> other_next_;  // (state << 21 | character), non-ASCII
  std::vector<uint32_t> key_;
  GrammarState scratch_;
  std::vector<Level> levels_;
  // Whole masks by start state (between characters): a JSON string's characters, say, all
  // start from one state, and its mask (most of the vocabulary) is the costly one to walk.
  std::unordered_map<int32_t, TokenMask> masks_;
  uint64_t cache_epoch_ = 0;  // counts clear_cache(): state ids from before are stale
  Stats stats_;
};

}  // namespace hearth
