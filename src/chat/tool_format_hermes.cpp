// Hermes 2 Pro / Qwen2.5 / Qwen3: each call is a JSON object between <tool_call> and
// </tool_call>, {"name": …, "arguments": {…}}.
#include "chat/tool_parsers.h"

namespace hearth::chat::tools {

std::unique_ptr<ToolCallParser> make_hermes_parser() {
  return std::make_unique<DelimitedCallParser>(
      "<tool_call>", "</tool_call>",
      [](std::string_view body) -> std::optional<std::vector<ToolCall>> {
        auto v = parse_json(body);
        if (!v) return std::nullopt;
        auto call = call_from_object(*v, "name", "arguments");
        if (!call) return std::nullopt;
        return std::vector<ToolCall>{std::move(*call)};
      });
}

}  // namespace hearth::chat::tools
