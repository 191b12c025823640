#include "chat/reasoning.h"

#include "chat/text_scan.h"

#include <algorithm>

namespace hearth::chat {

std::optional<ReasoningMarkers> detect_reasoning_markers(std::string_view src) {
  static const ReasoningMarkers kKnown[] = {{"<seed:think>", "</seed:think>"},
                                            {"<think>", "</think>"},
                                            {"[THINK]", "[/THINK]"},
                                            {"<|START_THINKING|>", "<|END_THINKING|>"}};
  for (const auto& m : kKnown)
    if (src.find(m.close) != std::string_view::npos) return m;
  return std::nullopt;
}

bool prompt_opens_reasoning(std::string_view prompt, const ReasoningMarkers& m) {
  while (!prompt.empty() && is_space(prompt.back())) prompt.remove_suffix(1);
  return !m.open.empty() && prompt.size() >= m.open.size() &&
         prompt.substr(prompt.size() - m.open.size()) == m.open;
}

ReasoningSplitter::ReasoningSplitter(ReasoningMarkers markers, bool starts_in_reasoning)
    : m_(std::move(markers)), state_(starts_in_reasoning ? State::Reasoning : State::Start) {
  strip_leading_ = starts_in_reasoning;
  if (m_.open.empty() || m_.close.empty()) state_ = State::Content;
}

ReasoningDelta ReasoningSplitter::push(std::string_view piece) {
  ReasoningDelta out;
  pending_ += piece;
  step(out, false);
  return out;
}

ReasoningDelta ReasoningSplitter::finish() {
  ReasoningDelta out;
  step(out, true);
  return out;
}

void ReasoningSplitter::step(ReasoningDelta& out, bool final) {
  while (true) {
    if (strip_leading_) {
      size_t n = 0;
      while (n < pending_.size() && is_space(pending_[n])) ++n;
      pending_.erase(0, n);
      if (pending_.empty()) return;
      strip_leading_ = false;
    }
    switch (state_) {
      case State::Start: {
        size_t ws = 0;
        while (ws < pending_.size() && is_space(pending_[ws])) ++ws;
        std::string_view rest = std::string_view(pending_).substr(ws);
        if (rest.size() >= m_.open.size() && rest.substr(0, m_.open.size()) == m_.open) {
          pending_.erase(0, ws + m_.open.size());
          state_ = State::Reasoning;
          strip_leading_ = true;
          continue;
        }
        if (!final && rest.size() < m_.open.size() && m_.open.compare(0, rest.size(), rest) == 0)
          return;  // maybe the start of the open marker (or only whitespace so far)
        state_ = State::Content;
        continue;
      }
      case State::Reasoning: {
        const size_t at = pending_.find(m_.close);
        if (at != std::string::npos) {
          size_t end = at;
          while (end > 0 && is_space(pending_[end - 1])) --end;  // trailing whitespace goes
          out.reasoning.append(pending_, 0, end);
          pending_.erase(0, at + m_.close.size());
          state_ = State::Content;
          strip_leading_ = true;
          continue;
        }
        if (final) {
          size_t end = pending_.size();
          while (end > 0 && is_space(pending_[end - 1])) --end;
          out.reasoning.append(pending_, 0, end);
          pending_.clear();
          return;
        }
        // Hold a possible partial close marker and trailing whitespace (it may precede it).
        size_t keep = partial_suffix(pending_, m_.close);
        size_t emit = pending_.size() - keep;
        while (emit > 0 && is_space(pending_[emit - 1])) --emit;
        out.reasoning.append(pending_, 0, emit);
        pending_.erase(0, emit);
        return;
      }
      case State::Content:
        out.content += pending_;
        pending_.clear();
        return;
    }
  }
}

}  // namespace hearth::chat
