#include "chat/tool_calls.h"

#include <array>
#include <utility>

#include "chat/tool_parsers.h"

namespace hearth::chat {
namespace {

constexpr std::array<std::pair<ToolFormat, std::string_view>, 9> kNames = {{
    {ToolFormat::None, "none"},
    {ToolFormat::Hermes, "hermes"},
    {ToolFormat::Qwen3Coder, "qwen3-coder"},
    {ToolFormat::Llama3, "llama3"},
    {ToolFormat::Mistral, "mistral"},
    {ToolFormat::DeepSeek, "deepseek"},
    {ToolFormat::CommandR, "command-r"},
    {ToolFormat::Functionary, "functionary"},
    {ToolFormat::Harmony, "harmony"},
}};

bool has(std::string_view src, std::string_view what) {
  return src.find(what) != std::string_view::npos;
}

// Everything is content.
class PlainParser : public ToolCallParser {
 public:
  ToolDelta push(std::string_view text) override { return {std::string(text), {}, {}}; }
  ToolDelta finish() override { return {}; }
};

}  // namespace

void ToolDelta::append(ToolDelta d) {
  content += d.content;
  reasoning += d.reasoning;
  for (ToolCall& c : d.calls) calls.push_back(std::move(c));
}

std::string_view tool_format_name(ToolFormat format) {
  for (const auto& [f, name] : kNames)
    if (f == format) return name;
  return "none";
}

std::optional<ToolFormat> tool_format_from_name(std::string_view name) {
  for (const auto& [f, n] : kNames)
    if (n == name) return f;
  return std::nullopt;
}

std::string tool_format_names() {
  std::string out;
  for (const auto& [f, name] : kNames) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

// The markers are checked from the most specific: Qwen3-Coder's templates also write
// <tool_call>, Functionary v3.1's <function= also appears in Qwen3-Coder's.
ToolFormat detect_tool_format(std::string_view src) {
  if (has(src, "<|channel|>")) return ToolFormat::Harmony;
  if (has(src,
          "tool\xE2\x96\x81"
          "calls\xE2\x96\x81"
          "begin"))
    return ToolFormat::DeepSeek;
  if (has(src, "[TOOL_CALLS]")) return ToolFormat::Mistral;
  if (has(src, "<|START_ACTION|>")) return ToolFormat::CommandR;
  if (has(src, "<tool_call>"))
    return has(src, "<function=") && has(src, "<parameter=") ? ToolFormat::Qwen3Coder
                                                             : ToolFormat::Hermes;
  if (has(src, ">>>all") || has(src, "<function=")) return ToolFormat::Functionary;
  if (has(src, "<|python_tag|>") || (has(src, "<|start_header_id|>") && has(src, "\"parameters\"")))
    return ToolFormat::Llama3;
  return ToolFormat::None;
}

bool tool_format_needs_special_tokens(ToolFormat format) {
  return format != ToolFormat::None;
}

std::unique_ptr<ToolCallParser> make_tool_call_parser(ToolFormat format,
                                                      const nlohmann::json& tools_json) {
  switch (format) {
    case ToolFormat::None:
      return std::make_unique<PlainParser>();
    case ToolFormat::Hermes:
      return tools::make_hermes_parser();
    case ToolFormat::Qwen3Coder:
      return tools::make_qwen3_coder_parser(tools_json);
    case ToolFormat::Llama3:
      return tools::make_llama3_parser();
    case ToolFormat::Mistral:
      return tools::make_mistral_parser();
    case ToolFormat::DeepSeek:
      return tools::make_deepseek_parser();
    case ToolFormat::CommandR:
      return tools::make_command_r_parser();
    case ToolFormat::Functionary:
      return tools::make_functionary_parser();
    case ToolFormat::Harmony:
      return tools::make_harmony_parser();
  }
  return std::make_unique<PlainParser>();
}

}  // namespace hearth::chat
