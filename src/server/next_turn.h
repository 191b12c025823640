// Next-turn warming, the server's half: when a chat reply finishes, the conversation's next
// request will start with the history as the chat template shows it — which for reasoning
// templates is not what the model generated (the <think> block dropped, an empty one from the
// generation prompt gone), so that request would prefill the whole previous answer again. This
// renders that history now, with the same template, tools and kwargs, and the engine computes
// it into the prefix cache while the user reads (GenerationRequest::warm: background work that
// gives way to any real request). Where it equals the cached path (the template keeps the
// reply as generated), the engine finds it cached and computes nothing.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>

#include "chat/chat_formatter.h"
#include "engine/request.h"
#include "server/request.h"
#include "tokenizer/tokenizer.h"

namespace hearth::server {

// The text the next request of this conversation starts with: the request's messages, the
// reply as a message the client sends back (`reply`: role, content, tool_calls; its
// reasoning_content only when the client sent reasoning back in earlier turns), and the opening
// of the next user message. nullopt when the template refuses it or nothing can be cut cleanly.
std::optional<TextPrompt> next_turn_prompt(const ParsedRequest& pr,
                                           const nlohmann::ordered_json& reply,
                                           const chat::ChatFormatter& formatter,
                                           const Tokenizer& tok);

}  // namespace hearth::server
