// The matcher's state and its one transition: a set of parse stacks advanced by a byte.
//
// A stack is a path of grammar positions (indices into Grammar::elements()), bottom first; its
// top is the character element to match next, each frame below it the position to go on at
// once the frame above is done. A step advances every stack whose top accepts the character,
// then expands each result until its top is a character again: the end of an alternative
// pops a frame, a rule reference pushes its alternatives (a reference in tail position pushes
// no return frame, so a repetition's loop never grows a stack). The stacks that meet are
// merged, and a stack popped empty means the root has been matched whole.
//
// Bounds keep a step's cost finite whatever the grammar: a set of stacks larger than
// max_stacks, a stack deeper than max_depth, or more than max_expansions stacks visited in
// one step fail the step (kTooManyStacks / kTooDeep) rather than grow.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "sampling/grammar.h"
#include "sampling/grammar_stack_set.h"
#include "sampling/utf8_partial.h"

namespace hearth {

struct MatcherLimits {
  size_t max_stacks = 1024;       // stacks alive at once (ambiguity)
  size_t max_depth = 1024;        // frames in one stack (nesting of the matched text)
  size_t max_expansions = 16384;  // stacks visited while expanding one step
  bool operator==(const MatcherLimits&) const = default;
};

enum class StepStatus : uint8_t {
  kOk,
  kNoMatch,        // the grammar does not allow the character here
  kBadUtf8,        // the byte cannot continue UTF-8
  kTooManyStacks,  // past max_stacks or max_expansions
  kTooDeep,        // a stack past max_depth
};

struct GrammarState {
  std::vector<uint32_t> frames;  // every stack's frames, bottom first, one stack after another
  std::vector<uint32_t> ends;    // stack i ends at frames[ends[i]] (and starts at ends[i - 1])
  bool complete = false;         // the root has been matched whole by the characters so far
  Utf8Partial partial;           // the bytes of a character not yet complete

  size_t n_stacks() const { return ends.size(); }
  std::span<const uint32_t> stack(size_t i) const {
    const size_t begin = i == 0 ? 0 : ends[i - 1];
    return std::span(frames).subspan(begin, ends[i] - begin);
  }
  uint32_t top(size_t i) const { return frames[ends[i] - 1]; }
  bool dead() const { return ends.empty() && !complete; }
  bool can_end() const { return complete && !partial.pending(); }
  void clear() {
    frames.clear();
    ends.clear();
    complete = false;
    partial = {};
  }
  bool operator==(const GrammarState&) const = default;
};

// Computes steps; holds only scratch memory (reused across calls), no matching state.
class GrammarStepper {
 public:
  GrammarStepper(const Grammar& grammar, const MatcherLimits& limits);

  // The state before any input: the root's alternatives, expanded.
  StepStatus start(GrammarState& out);
  // `out` = `in` advanced by one byte (`out` must not be `in`). On failure `out` is cleared.
  StepStatus step_byte(const GrammarState& in, uint8_t byte, GrammarState& out);
  // `out` = `in` advanced by one whole character (in.partial is ignored).
  StepStatus step_char(const GrammarState& in, uint32_t cp, GrammarState& out);
  // Whether some stack of `s` accepts a character in [lo, hi].
  bool admits_any(const GrammarState& s, uint32_t lo, uint32_t hi) const;

 private:
  StepStatus expand_all(GrammarState& out);
  StepStatus follow(GrammarState& out);
  void load(std::span<const uint32_t> stack);
  void push(uint32_t frame);
  void pop();
  void add_work(uint32_t alternative);

  const Grammar& g_;
  MatcherLimits limits_;
  std::vector<uint32_t> cur_;       // the stack being expanded
  std::vector<uint64_t> cur_hash_;  // cur_hash_[i] = stack_hash of cur_[0 .. i]
  std::vector<uint32_t> work_;      // stacks still to expand, flat, each followed by its size
  StackSet seen_;                   // every stack visited in this step
};

std::string_view step_status_text(StepStatus s);

}  // namespace hearth
