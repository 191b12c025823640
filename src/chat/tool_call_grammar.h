// The grammar that forces a reply to be tool calls (tool_choice "required" or a named
// function), written the way the format's models write them and the way their chat templates
// render calls back into the history, so the next turn's prompt repeats the reply's text and
// the prefix cache keeps it. Each call's arguments follow its function's `parameters` schema
// (sampling/json_schema_grammar.h; a function without one takes any object), written as the
// templates' `tojson` writes JSON (", " and ": ", nothing else), so the arguments rendered back
// from a call are the reply's own text.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "chat/tool_calls.h"

namespace hearth::chat {

// `tools`: the request's tools (validated: an array of {"type":"function","function":{...}}).
// `only`: the function a named tool_choice forces; `parallel`: one or more calls. Qwen3-Coder's
// parameters are written in the schema's `properties` order, the required ones only. Throws
// hearth::Error (naming the tool) for a parameters schema the converter refuses.
std::string tool_call_gbnf(ToolFormat format, const nlohmann::json& tools,
                           const std::optional<std::string>& only, bool parallel);

// The text the format's calls begin with (what tool_call_gbnf's language starts with), the
// trigger of a lazy grammar for tool_choice "auto": free text until the model opens a call,
// then the call is constrained. Nullopt for a format whose calls have no opener (llama3).
std::optional<std::string> tool_call_trigger(ToolFormat format);

}  // namespace hearth::chat
