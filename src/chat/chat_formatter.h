// Conversation -> prompt text with the model's own chat template. OpenAI-style messages are
// normalised first (content parts joined, null content as "", developer as system, JSON-string
// tool-call arguments parsed), then rendered with bos/eos, tools, add_generation_prompt and
// the request's chat_template_kwargs. A model without a template gets ChatML, with a warning.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "chat/reasoning.h"
#include "chat/template.h"

namespace hearth::chat {

// Throws hearth::Error naming the offending message ("messages[2].content: ...").
nlohmann::ordered_json normalize_messages(const nlohmann::ordered_json& messages);

class ChatFormatter {
 public:
  // template_source: the model's `tokenizer.chat_template` (nullopt or empty: ChatML).
  // Throws TemplateError when the template does not parse.
  ChatFormatter(std::optional<std::string> template_source, std::string bos_token,
                std::string eos_token);

  // messages: OpenAI messages; tools: array or null; kwargs: object or null, merged last into
  // the template's variables (e.g. {"enable_thinking": false}). Throws hearth::Error
  // (TemplateError for the template's own failures, raise_exception messages included).
  Rendered format(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                  bool add_generation_prompt, const nlohmann::ordered_json& kwargs = nullptr,
                  const RenderOptions& options = {}) const;

  bool uses_fallback() const { return fallback_; }
  const std::string& warning() const { return warning_; }  // set when the fallback is used
  const Template& chat_template() const { return template_; }
  // Reasoning markers the template uses (nullopt: a template without reasoning).
  const std::optional<ReasoningMarkers>& reasoning_markers() const { return markers_; }
  // A splitter for the reply to `prompt` (starts in reasoning when the prompt opened a block).
  ReasoningSplitter reasoning_splitter(const Rendered& prompt) const;

  static const char* chatml_template();

 private:
  Template template_;
  std::string bos_, eos_;
  bool fallback_ = false;
  std::string warning_;
  std::optional<ReasoningMarkers> markers_;
};

}  // namespace hearth::chat
