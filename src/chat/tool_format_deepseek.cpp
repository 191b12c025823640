// DeepSeek R1 / V3: the calls sit in one block after any content, each call its own sub-block
// with its type, the name and the arguments in a fenced JSON code block (the markers' bars and
// underscores are U+FF5C and U+2581, not ASCII):
//   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather
//   ```json
//   {"city": "Paris"}
//   ```<｜tool▁call▁end｜><｜tool▁calls▁end｜>
// V3.1 drops the type and the fence, in the same block:
//   <｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}<｜tool▁call▁end｜>
#include "chat/tool_parsers.h"

namespace hearth::chat::tools {
namespace {

constexpr std::string_view kCallsBegin = "<｜tool▁calls▁begin｜>";
constexpr std::string_view kCallsEnd = "<｜tool▁calls▁end｜>";
constexpr std::string_view kCallBegin = "<｜tool▁call▁begin｜>";
constexpr std::string_view kCallEnd = "<｜tool▁call▁end｜>";
constexpr std::string_view kSep = "<｜tool▁sep｜>";

// R1 / V3's NAME\n```json\n{…}\n``` after "function".
std::optional<ToolCall> parse_fenced_call(std::string_view text) {
  const size_t newline = text.find('\n');
  if (newline == std::string_view::npos) return std::nullopt;
  const std::string_view name = trim(text.substr(0, newline));
  std::string_view args = trim(text.substr(newline + 1));
  // The fence, tolerated missing: the distilled models do not always write it.
  if (args.starts_with("```json"))
    args.remove_prefix(7);
  else if (args.starts_with("```"))
    args.remove_prefix(3);
  if (args.ends_with("```")) args.remove_suffix(3);
  auto value = parse_json(args);
  if (name.empty() || !value) return std::nullopt;
  auto arguments = arguments_text(*value);
  if (!arguments) return std::nullopt;
  return ToolCall{std::string(name), std::move(*arguments), ""};
}

// The text between <｜tool▁call▁begin｜> and <｜tool▁call▁end｜>.
std::optional<ToolCall> parse_call(std::string_view text) {
  const size_t sep = text.find(kSep);
  if (sep == std::string_view::npos) return std::nullopt;
  const std::string_view before = trim(text.substr(0, sep));
  const std::string_view after = text.substr(sep + kSep.size());
  if (trim(after).starts_with('{')) {  // V3.1: the name, then the arguments
    auto value = parse_json(after);
    if (before.empty() || !value) return std::nullopt;
    auto arguments = arguments_text(*value);
    if (!arguments) return std::nullopt;
    return ToolCall{std::string(before), std::move(*arguments), ""};
  }
  if (before != "function") return std::nullopt;
  return parse_fenced_call(after);
}

// The calls block's inside: call sub-blocks, whitespace between them.
std::optional<std::vector<ToolCall>> parse_calls(std::string_view body) {
  std::vector<ToolCall> calls;
  while (!(body = trim(body)).empty()) {
    if (!body.starts_with(kCallBegin)) return std::nullopt;
    body.remove_prefix(kCallBegin.size());
    const size_t end = body.find(kCallEnd);
    if (end == std::string_view::npos) return std::nullopt;
    auto call = parse_call(body.substr(0, end));
    if (!call) return std::nullopt;
    calls.push_back(std::move(*call));
    body.remove_prefix(end + kCallEnd.size());
  }
  return calls;
}

}  // namespace

std::unique_ptr<ToolCallParser> make_deepseek_parser() {
  return std::make_unique<DelimitedCallParser>(std::string(kCallsBegin), std::string(kCallsEnd),
                                               parse_calls);
}

}  // namespace hearth::chat::tools
