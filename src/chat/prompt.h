// The one prompt path of the server and `hearth chat`: OpenAI messages -> the engine's text
// prompt, rendered with the model's chat template (ChatML when it has none). Special-token text
// is parsed only inside the template's own text, never inside message content; BOS is added as
// the vocabulary asks unless the template wrote it. The engine tokenizes the prompt (once) and
// says how many tokens it has; only truncation "auto" tokenizes here, and then hands its ids on
// so the engine does not tokenize again.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "chat/chat_formatter.h"
#include "tokenizer/text_prompt.h"
#include "tokenizer/tokenizer.h"

namespace hearth::chat {

struct PromptInput {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();  // OpenAI messages
  nlohmann::ordered_json tools = nullptr;                             // array or null
  bool add_generation_prompt = true;
  nlohmann::ordered_json kwargs = nullptr;  // chat_template_kwargs: object or null
};

struct ChatPrompt {
  TextPrompt text;    // for the engine (text.tokens filled when counted here)
  Rendered rendered;  // the rendering (the reasoning splitter reads it)
  int64_t dropped_messages = 0;
};

// The BOS rule: the vocabulary's lead tokens, unless the text already starts with BOS's text.
bool wants_lead_tokens(const Tokenizer& tok, std::string_view text);

class PromptBuilder {
 public:
  // `formatter` renders (ChatML when the model has no template); `tok` gives BOS and counts.
  PromptBuilder(const ChatFormatter& formatter, const Tokenizer& tok)
      : formatter_(formatter), tok_(tok) {}

  // The whole conversation, not tokenized. Throws hearth::Error (the template refuses).
  ChatPrompt render(const PromptInput& in) const;
  // truncation "auto": drops the oldest messages other than system/developer ones and the last
  // one until the prompt has at most `max_tokens` tokens (or nothing more can go). The result
  // carries its ids (text.tokens). Each candidate is tokenized at most once; the first guess
  // comes from the full prompt's tokens per byte.
  ChatPrompt render_within(const PromptInput& in, int64_t max_tokens) const;

 private:
  ChatPrompt render_dropping(const PromptInput& in, const std::vector<size_t>& victims,
                             size_t n_drop) const;

  const ChatFormatter& formatter_;
  const Tokenizer& tok_;
};

}  // namespace hearth::chat
