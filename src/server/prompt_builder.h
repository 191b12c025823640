// Turning a parsed request into the engine's prompt: chat messages rendered as prompt text
// (special tokens only inside the template's own text), tokenized with the real tokenizer to
// check the context window, and — when the client opts in with truncation "auto" — the oldest
// non-system turns dropped until the prompt plus the reply's reserve fits.
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
  std::vector<int32_t> tokens;   // ... the ids, always filled (counting, logprobs, echo)
  bool from_tokens = false;      // the client sent ids: pass `tokens`
  int64_t dropped_messages = 0;  // truncation "auto"
  // reasoning_format "deepseek": splits the reply (it knows whether the prompt opened a block)
  std::optional<chat::ReasoningSplitter> reasoning;
};

// Chat messages -> ChatML prompt text, for callers without a model (the request fuzzer); the
// server renders with the model's template through chat::ChatFormatter.
TextPrompt render_chat(const std::vector<ChatMessage>& messages, bool add_generation_prompt);

// Tokenizes like the engine: special-token text is parsed only inside `special_ranges` (all of
// it when the ranges are empty and parse_special is set).
std::vector<int32_t> encode_prompt(const Tokenizer& tok, const TextPrompt& prompt);

// Throws 400 context_length_exceeded (message with the counts) unless prompt + requested reply
// fit `n_ctx`; without a requested length only the prompt (plus one token) must fit.
void check_context(int64_t prompt_tokens, std::optional<int64_t> max_tokens, int64_t n_ctx);

// `formatter`: the model's chat template (null: render_chat). Throws ApiError (context) or
// hearth::Error (a message the template refuses).
BuiltPrompt build_prompt(const ParsedRequest& req, const Tokenizer& tok, int64_t n_ctx,
                         const chat::ChatFormatter* formatter);

}  // namespace hearth::server
