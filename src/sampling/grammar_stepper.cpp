#include "sampling/grammar_stepper.h"

namespace hearth {

GrammarStepper::GrammarStepper(const Grammar& grammar, const MatcherLimits& limits)
    : g_(grammar), limits_(limits) {}

std::string_view step_status_text(StepStatus s) {
  switch (s) {
    case StepStatus::kOk:
      return "ok";
    case StepStatus::kNoMatch:
      return "not allowed by the grammar";
    case StepStatus::kBadUtf8:
      return "invalid UTF-8";
    case StepStatus::kTooManyStacks:
      return "the grammar is too ambiguous here (too many parse stacks)";
    case StepStatus::kTooDeep:
      return "nested too deep for the grammar matcher";
  }
  return "?";
}

void GrammarStepper::load(std::span<const uint32_t> stack) {
  cur_.assign(stack.begin(), stack.end());
  cur_hash_.clear();
  uint64_t h = kStackHashSeed;
  for (uint32_t f : cur_) cur_hash_.push_back(h = stack_hash_push(h, f));
}

void GrammarStepper::push(uint32_t frame) {
  cur_.push_back(frame);
  cur_hash_.push_back(
      stack_hash_push(cur_hash_.empty() ? kStackHashSeed : cur_hash_.back(), frame));
}

void GrammarStepper::pop() {
  cur_.pop_back();
  cur_hash_.pop_back();
}

void GrammarStepper::add_work(uint32_t alternative) {
  work_.insert(work_.end(), cur_.begin(), cur_.end());
  work_.push_back(alternative);
  work_.push_back(static_cast<uint32_t>(cur_.size() + 1));
}

// Follows cur_ until its top is a character (a result), it is empty (the root is done), or it
// was already visited in this step; the other alternatives met on the way go to work_.
StepStatus GrammarStepper::follow(GrammarState& out) {
  for (;;) {
    if (cur_.empty()) {
      out.complete = true;
      return StepStatus::kOk;
    }
    if (!seen_.insert(cur_, cur_hash_.back())) return StepStatus::kOk;
    if (seen_.size() > limits_.max_expansions) return StepStatus::kTooManyStacks;
    const uint32_t pos = cur_.back();
    const GrammarElement& e = g_.at(pos);
    if (is_char_op(e.op)) {
      // A class that matches nothing (`[]`) ends the path here rather than keep a stack that
      // could never move.
      if (e.op == GrammarOp::kCharSet && g_.char_set(e.a).empty()) return StepStatus::kOk;
      if (out.n_stacks() >= limits_.max_stacks) return StepStatus::kTooManyStacks;
      out.frames.insert(out.frames.end(), cur_.begin(), cur_.end());
      out.ends.push_back(static_cast<uint32_t>(out.frames.size()));
      return StepStatus::kOk;
    }
    pop();
    if (e.op != GrammarOp::kRuleRef) continue;         // an alternative ended: back to the caller
    if (!is_end_op(g_.at(pos + 1).op)) push(pos + 1);  // where to go on after the rule
    if (cur_.size() >= limits_.max_depth) return StepStatus::kTooDeep;
    const auto alts = g_.alternatives(e.a);
    for (size_t k = alts.size(); k-- > 1;) add_work(alts[k]);
    push(alts[0]);
  }
}

StepStatus GrammarStepper::expand_all(GrammarState& out) {
  for (;;) {
    const StepStatus s = follow(out);
    if (s != StepStatus::kOk) return s;
    if (work_.empty()) return StepStatus::kOk;
    const uint32_t size = work_.back();
    work_.pop_back();
    load(std::span(work_).subspan(work_.size() - size));
    work_.resize(work_.size() - size);
  }
}

StepStatus GrammarStepper::start(GrammarState& out) {
  out.clear();
  seen_.clear();
  work_.clear();
  for (uint32_t alt : g_.alternatives(g_.root())) {
    load({});
    push(alt);
    const StepStatus s = expand_all(out);
    if (s != StepStatus::kOk) {
      out.clear();
      return s;
    }
  }
  return out.dead() ? StepStatus::kNoMatch : StepStatus::kOk;
}

StepStatus GrammarStepper::step_char(const GrammarState& in, uint32_t cp, GrammarState& out) {
  out.clear();
  seen_.clear();
  work_.clear();
  for (size_t i = 0; i < in.n_stacks(); ++i) {
    if (!g_.char_matches(in.top(i), cp)) continue;
    load(in.stack(i));
    const uint32_t next = cur_.back() + 1;
    pop();
    push(next);
    const StepStatus s = expand_all(out);
    if (s != StepStatus::kOk) {
      out.clear();
      return s;
    }
  }
  return out.dead() ? StepStatus::kNoMatch : StepStatus::kOk;
}

bool GrammarStepper::admits_any(const GrammarState& s, uint32_t lo, uint32_t hi) const {
  for (size_t i = 0; i < s.n_stacks(); ++i)
    if (g_.char_intersects(s.top(i), lo, hi)) return true;
  return false;
}

StepStatus GrammarStepper::step_byte(const GrammarState& in, uint8_t byte, GrammarState& out) {
  Utf8Partial p = in.partial;
  uint32_t cp = 0;
  switch (utf8_push(p, byte, cp)) {
    case Utf8Push::kInvalid:
      out.clear();
      return StepStatus::kBadUtf8;
    case Utf8Push::kChar:
      return step_char(in, cp, out);
    case Utf8Push::kMore:
      break;
  }
  // Mid-character: the stacks wait for the rest, if some stack can take a character that starts
  // with these bytes.
  const CharRange r = utf8_pending_range(p);
  if (!admits_any(in, r.lo, r.hi)) {
    out.clear();
    return StepStatus::kNoMatch;
  }
  out.frames = in.frames;
  out.ends = in.ends;
  out.complete = in.complete;
  out.partial = p;
  return StepStatus::kOk;
}

}  // namespace hearth
