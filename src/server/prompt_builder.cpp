#include "server/prompt_builder.h"

#include <fmt/format.h>

#include "chat/prompt.h"
#include "engine/engine.h"
#include "server/api_error.h"

namespace hearth::server {

void check_context(int64_t prompt_tokens, std::optional<int64_t> max_tokens, int64_t n_ctx) {
  const int64_t want = prompt_tokens + (max_tokens ? *max_tokens : 1);
  if (want <= n_ctx) return;
  std::string msg =
      max_tokens
          ? fmt::format(
                "This model's maximum context length is {} tokens. However, you requested {} "
                "tokens ({} in the prompt, {} for the completion). Please reduce the prompt or "
                "the completion length.",
                n_ctx, want, prompt_tokens, *max_tokens)
          : fmt::format(
                "This model's maximum context length is {} tokens. However, your prompt has {} "
                "tokens, leaving no room for the completion. Please reduce the prompt.",
                n_ctx, prompt_tokens);
  throw ApiError(400, msg, "invalid_request_error", "messages", "context_length_exceeded");
}

void set_context_rule(GenerationRequest& g, std::optional<int64_t> max_tokens, int64_t n_ctx) {
  g.context_limit = n_ctx;
  g.context_reserve = max_tokens ? *max_tokens : 1;
  g.max_tokens = max_tokens ? *max_tokens : -1;  // -1: the rest of the context
}

namespace {

BuiltPrompt build_completion_prompt(const ParsedRequest& req, const Tokenizer& tok, int64_t n_ctx) {
  BuiltPrompt out;
  if (req.prompt_is_tokens) {
    out.tokens = req.prompt_tokens;
    for (size_t i = 0; i < out.tokens.size(); ++i)
      if (out.tokens[i] >= static_cast<int32_t>(tok.n_vocab()))
        bad_param(fmt::format("prompt[{}]", i),
                  fmt::format("token id {} is out of range (vocabulary {})", out.tokens[i],
                              tok.n_vocab()));
  }
  // Raw completions: the client's text is the prompt; special tokens in it are parsed, as
  // llama-server does (the client owns the whole text).
  out.text.text = req.prompt_text;
  out.text.add_special = true;
  out.text.parse_special = true;
  // The engine tokenizes a text; an empty one has only its lead tokens, if any.
  if (!req.prompt_is_tokens && req.prompt_text.empty()) out.tokens = tokenize_prompt(tok, out.text);
  out.from_tokens = req.prompt_is_tokens || req.prompt_text.empty();
  if (out.from_tokens) {
    if (out.tokens.empty()) bad_param("prompt", "the prompt has no tokens");
    check_context(static_cast<int64_t>(out.tokens.size()), req.max_tokens, n_ctx);
  }
  return out;
}

}  // namespace

BuiltPrompt build_prompt(const ParsedRequest& req, const Tokenizer& tok, int64_t n_ctx,
                         const chat::ChatFormatter& formatter) {
  if (req.api != Api::ChatCompletions) return build_completion_prompt(req, tok, n_ctx);
  const chat::PromptBuilder builder(formatter, tok);
  chat::PromptInput in;
  in.messages = req.messages_json;
  in.tools = req.tools;
  in.add_generation_prompt = req.add_generation_prompt;
  in.kwargs = req.chat_template_kwargs;
  // truncation "auto": keep the system messages and the newest turns that fit with room for
  // the reply.
  const int64_t reserve = req.max_tokens ? *req.max_tokens : std::max<int64_t>(1, n_ctx / 4);
  chat::ChatPrompt p =
      req.truncation == "auto" ? builder.render_within(in, n_ctx - reserve) : builder.render(in);
  BuiltPrompt out;
  out.text = std::move(p.text);
  out.dropped_messages = p.dropped_messages;
  if (req.reasoning_format == "deepseek") out.reasoning = formatter.reasoning_splitter(p.rendered);
  return out;
}

}  // namespace hearth::server
