// Validation of the tool-calling fields of a request: the shapes OpenAI
// documents, refused with a 400 naming the exact parameter ("tools[0].function.name") rather
// than passed to a chat template that would ignore or choke on them.
#pragma once

#include <nlohmann/json.hpp>

#include "server/request.h"

namespace hearth::server {

// tools, tool_choice, parallel_tool_calls (chat completions): what the reply may do with the
// tools. Without tool_choice, tools mean "auto" (OpenAI's default); an empty list means none.
ToolUse check_tools(const nlohmann::json& body);

}  // namespace hearth::server
