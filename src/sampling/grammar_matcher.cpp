#include "sampling/grammar_matcher.h"

#include <fmt/format.h>

#include <utility>

namespace hearth {

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar, const MatcherLimits& limits)
    : grammar_(std::move(grammar)), limits_(limits) {
  reset();
}

void GrammarMatcher::reset() {
  n_bytes_ = 0;
  error_.clear();
  GrammarStepper stepper(*grammar_, limits_);
  const StepStatus s = stepper.start(state_);
  if (s != StepStatus::kOk)
    error_ = s == StepStatus::kNoMatch
                 ? "grammar: the grammar matches no text at all"
                 : fmt::format("grammar: at the start: {}", step_status_text(s));
}

namespace {

// The character a failing byte completes, or the byte itself, for an error message.
std::string describe(const Utf8Partial& before, uint8_t byte) {
  Utf8Partial p = before;
  uint32_t cp = 0;
  if (utf8_push(p, byte, cp) != Utf8Push::kChar) return fmt::format("byte 0x{:02X}", byte);
  if (cp >= 0x20 && cp < 0x7F) return fmt::format("'{}'", static_cast<char>(cp));
  return fmt::format("U+{:04X}", cp);
}

}  // namespace

void GrammarMatcher::die(StepStatus status, uint8_t byte) {
  const std::string what = describe(state_.partial, byte);
  error_ = fmt::format("grammar: {} at byte {} of the text: {}", what, n_bytes_,
                       step_status_text(status));
  state_.clear();
}

bool GrammarMatcher::accept_bytes(std::string_view utf8) {
  if (dead()) return false;
  GrammarStepper stepper(*grammar_, limits_);
  GrammarState next;
  for (char c : utf8) {
    const auto byte = static_cast<uint8_t>(c);
    const StepStatus s = stepper.step_byte(state_, byte, next);
    if (s != StepStatus::kOk) {
      die(s, byte);
      return false;
    }
    std::swap(state_, next);
    ++n_bytes_;
  }
  return true;
}

}  // namespace hearth
