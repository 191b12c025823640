// What a chat request's tools change about its generation: a reader for the calls in the reply
// (any tool_choice but "none"), the control tokens rendered as text (the formats' markers), and
// for tool_choice "required" or a named function, the grammar that makes the reply those calls
// (chat/tool_call_grammar.h). A request that also constrains the reply through response_format
// or a grammar, or forces a call with no tool-call format to write it in, is a 400.
#pragma once

#include <memory>

#include "chat/tool_calls.h"
#include "server/request.h"
#include "server/tool_call_reader.h"

namespace hearth::server {

// Null when the reply is not read for calls.
std::unique_ptr<ToolCallReader> plan_tool_use(ParsedRequest& pr, chat::ToolFormat format);

}  // namespace hearth::server
