#include "server/prompt_builder.h"

#include <fmt/format.h>

#include "server/api_error.h"

namespace hearth::server {

TextPrompt render_chat(const std::vector<ChatMessage>& messages, bool add_generation_prompt) {
  TextPrompt p;
  p.add_special = true;
  p.parse_special = true;
  auto special = [&](std::string_view s) {
    p.special_ranges.emplace_back(p.text.size(), p.text.size() + s.size());
    p.text.append(s);
  };
  for (const ChatMessage& m : messages) {
    special("<|im_start|>");
    p.text += (m.role == "developer" ? std::string("system") : m.role) + "\n";
    p.text += m.content;
    special("<|im_end|>");
    p.text += "\n";
  }
  if (add_generation_prompt) {
    special("<|im_start|>");
    p.text += "assistant\n";
  }
  return p;
}

std::vector<int32_t> encode_prompt(const Tokenizer& tok, const TextPrompt& prompt) {
  if (!prompt.parse_special || prompt.special_ranges.empty())
    return tok.encode(prompt.text, prompt.add_special, prompt.parse_special);
  return tok.encode_with_control_ranges(prompt.text, prompt.add_special, prompt.special_ranges);
}

namespace {

// One rendering of the (possibly truncated) conversation.
TextPrompt render(const ParsedRequest& req, const nlohmann::ordered_json& messages,
                  const std::vector<ChatMessage>& plain, const Tokenizer& tok,
                  const chat::ChatFormatter* formatter, chat::Rendered* rendered) {
  if (!formatter) return render_chat(plain, req.add_generation_prompt);
  *rendered =
      formatter->format(messages, req.tools, req.add_generation_prompt, req.chat_template_kwargs);
  TextPrompt p;
  p.text = rendered->text;
  p.special_ranges = rendered->special_ok;
  p.parse_special = true;
  // Templates that write bos_token themselves must not get a second one.
  const std::string bos = tok.bos() >= 0 ? tok.token_to_piece(tok.bos(), true) : "";
  p.add_special = bos.empty() || p.text.rfind(bos, 0) != 0;
  return p;
}

}  // namespace

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

BuiltPrompt build_prompt(const ParsedRequest& req, const Tokenizer& tok, int64_t n_ctx,
                         const chat::ChatFormatter* formatter) {
  BuiltPrompt out;
  if (req.api != Api::ChatCompletions) {
    if (req.prompt_is_tokens) {
      out.tokens = req.prompt_tokens;
      out.from_tokens = true;
      for (size_t i = 0; i < out.tokens.size(); ++i)
        if (out.tokens[i] >= static_cast<int32_t>(tok.n_vocab()))
          bad_param(fmt::format("prompt[{}]", i),
                    fmt::format("token id {} is out of range (vocabulary {})", out.tokens[i],
                                tok.n_vocab()));
    } else {
      // Raw completions: the client's text is the prompt; special tokens in it are parsed, as
      // llama-server does (the client owns the whole text).
      out.text.text = req.prompt_text;
      out.text.add_special = true;
      out.text.parse_special = true;
      out.tokens = encode_prompt(tok, out.text);
    }
    if (out.tokens.empty()) bad_param("prompt", "the prompt has no tokens");
    check_context(static_cast<int64_t>(out.tokens.size()), req.max_tokens, n_ctx);
    return out;
  }

  std::vector<ChatMessage> messages = req.messages;
  nlohmann::ordered_json messages_json = req.messages_json;
  chat::Rendered rendered;
  auto finish = [&] {
    if (req.reasoning_format == "deepseek")
      out.reasoning =
          formatter ? formatter->reasoning_splitter(rendered) : chat::ReasoningSplitter();
    check_context(static_cast<int64_t>(out.tokens.size()), req.max_tokens, n_ctx);
    return out;
  };
  out.text = render(req, messages_json, messages, tok, formatter, &rendered);
  out.tokens = encode_prompt(tok, out.text);
  if (req.truncation != "auto") return finish();
  // Keep the system messages and the newest turns that fit with room for the reply.
  const int64_t reserve = req.max_tokens ? *req.max_tokens : std::max<int64_t>(1, n_ctx / 4);
  while (static_cast<int64_t>(out.tokens.size()) + reserve > n_ctx) {
    size_t victim = messages.size();
    for (size_t i = 0; i + 1 < messages.size(); ++i)
      if (messages[i].role != "system" && messages[i].role != "developer") {
        victim = i;
        break;
      }
    if (victim == messages.size()) break;  // only system messages and the last turn are left
    messages.erase(messages.begin() + static_cast<std::ptrdiff_t>(victim));
    messages_json.erase(messages_json.begin() + static_cast<std::ptrdiff_t>(victim));
    ++out.dropped_messages;
    out.text = render(req, messages_json, messages, tok, formatter, &rendered);
    out.tokens = encode_prompt(tok, out.text);
  }
  return finish();
}

}  // namespace hearth::server
