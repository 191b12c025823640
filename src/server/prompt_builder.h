// Turning a parsed request into the engine's prompt. Chat messages go through the one prompt
// path (chat/prompt.h); the engine tokenizes the prompt once and checks it against the context
// (GenerationRequest::context_limit), which the server reports as context_length_exceeded.
// Only truncation "auto" counts tokens here, and hands its ids on to the engine.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "chat/chat_formatter.h"
#include "engine/request.h"
#include "server/request.h"
#include "tokenizer/tokenizer.h"

namespace hearth::server {

struct BuiltPrompt {
  TextPrompt text;               // what the engine gets (prompt_text), or
  std::vector<int32_t> tokens;   // ... the ids, when `from_tokens`
  bool from_tokens = false;      // the client sent ids (or an empty text): pass `tokens`
  int64_t dropped_messages = 0;  // truncation "auto"
  // reasoning_format "deepseek": splits the reply (it knows whether the prompt opened a block)
  std::optional<chat::ReasoningSplitter> reasoning;
};

// Throws 400 context_length_exceeded (message with the counts) unless prompt + requested reply
// fit `n_ctx`; without a requested length only the prompt (plus one token) must fit.
void check_context(int64_t prompt_tokens, std::optional<int64_t> max_tokens, int64_t n_ctx);

// The context rule of check_context, for the engine to apply once it has tokenized the prompt.
void set_context_rule(GenerationRequest& g, std::optional<int64_t> max_tokens, int64_t n_ctx);

// `formatter`: the model's chat template (ChatML when it has none). Throws ApiError (context,
// ids out of range) or hearth::Error (a message the template refuses).
BuiltPrompt build_prompt(const ParsedRequest& req, const Tokenizer& tok, int64_t n_ctx,
                         const chat::ChatFormatter& formatter);

}  // namespace hearth::server
