// Mistral: the calls follow [TOOL_CALLS] after any content, and run to the end of the reply.
// The v3 to v7 templates (Mistral 7B v0.3, Nemo, Small 3.1) write one JSON array:
//   [TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "abcDEF123"}]
// the v11+ ones (Small 3.2, Devstral, Magistral) the name, then the arguments, per call:
//   [TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]get_time[ARGS]{}
// with the call's id in between when the tokenizer has [CALL_ID]: NAME[CALL_ID]ID[ARGS]{…}.
#include "chat/tool_parsers.h"

namespace hearth::chat::tools {
namespace {

using nlohmann::json;

constexpr std::string_view kToolCalls = "[TOOL_CALLS]";
constexpr std::string_view kArgs = "[ARGS]";
constexpr std::string_view kCallId = "[CALL_ID]";

// [{"name": …, "arguments": {…}, "id": …}, …], or one such object.
std::optional<std::vector<ToolCall>> parse_call_array(std::string_view text) {
  auto v = parse_json(text);
  if (!v) return std::nullopt;
  const json list = v->is_array() ? *v : json::array({*v});
  std::vector<ToolCall> calls;
  for (const json& obj : list) {
    auto call = call_from_object(obj, "name", "arguments");
    if (!call) return std::nullopt;
    if (auto id = obj.find("id"); id != obj.end() && id->is_string())
      call->id = id->get<std::string>();
    calls.push_back(std::move(*call));
  }
  return calls;
}

// NAME[ARGS]{…} or NAME[CALL_ID]ID[ARGS]{…}.
std::optional<ToolCall> parse_named_call(std::string_view text) {
  const size_t args_at = text.find(kArgs);
  if (args_at == std::string_view::npos) return std::nullopt;
  std::string_view head = text.substr(0, args_at);
  std::string id;
  if (const size_t id_at = head.find(kCallId); id_at != std::string_view::npos) {
    id = trim(head.substr(id_at + kCallId.size()));
    head = head.substr(0, id_at);
  }
  const std::string_view name = trim(head);
  auto args = parse_json(text.substr(args_at + kArgs.size()));
  if (name.empty() || !args) return std::nullopt;
  auto arguments = arguments_text(*args);
  if (!arguments) return std::nullopt;
  return ToolCall{std::string(name), std::move(*arguments), std::move(id)};
}

// Everything after the first [TOOL_CALLS]: one or more sections, each an array of calls or one
// named call, separated by further [TOOL_CALLS].
std::optional<std::vector<ToolCall>> parse_sections(std::string_view body) {
  std::vector<ToolCall> calls;
  while (true) {
    const size_t next = body.find(kToolCalls);
    const std::string_view section = trim(body.substr(0, next));
    if (section.starts_with('[') || section.starts_with('{')) {
      auto listed = parse_call_array(section);
      if (!listed) return std::nullopt;
      for (ToolCall& c : *listed) calls.push_back(std::move(c));
    } else {
      auto call = parse_named_call(section);
      if (!call) return std::nullopt;
      calls.push_back(std::move(*call));
    }
    if (next == std::string_view::npos) return calls;
    body.remove_prefix(next + kToolCalls.size());
  }
}

}  // namespace

std::unique_ptr<ToolCallParser> make_mistral_parser() {
  return std::make_unique<DelimitedCallParser>(std::string(kToolCalls), "", parse_sections);
}

}  // namespace hearth::chat::tools
