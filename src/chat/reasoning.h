// Splits a model's streamed output into reasoning ("<think>…</think>") and answer text. Pieces
// go in as they are generated; deltas come out, and a marker is never emitted or split: text
// that may be the start of a marker is held until the next piece (or finish()) decides.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace hearth::chat {

struct ReasoningMarkers {
  std::string open = "<think>";
  std::string close = "</think>";
};

// The markers a chat template uses, when it mentions one of the known pairs (<think>,
// <seed:think>, [THINK], <|START_THINKING|>); nullopt for templates without reasoning.
std::optional<ReasoningMarkers> detect_reasoning_markers(std::string_view template_source);

// Whether a rendered prompt leaves a reasoning block open (it ends with the open marker, as
// DeepSeek-R1's and some Qwen3 modes' generation prompts do): the output starts as reasoning.
bool prompt_opens_reasoning(std::string_view prompt, const ReasoningMarkers& markers);

struct ReasoningDelta {
  std::string reasoning;
  std::string content;
  bool empty() const { return reasoning.empty() && content.empty(); }
};

class ReasoningSplitter {
 public:
  // The open marker counts only at the very start of the output (after whitespace); once the
  // answer has started, marker text is ordinary content.
  explicit ReasoningSplitter(ReasoningMarkers markers = {}, bool starts_in_reasoning = false);

  ReasoningDelta push(std::string_view piece);
  // End of generation: releases held-back text (an unclosed block stays reasoning).
  ReasoningDelta finish();
  bool in_reasoning() const { return state_ == State::Reasoning; }

 private:
  enum class State { Start, Reasoning, Content };
  void step(ReasoningDelta& out, bool final);

  ReasoningMarkers m_;
  State state_;
  std::string pending_;
  bool strip_leading_ = false;  // drop whitespace right after a marker
};

}  // namespace hearth::chat
