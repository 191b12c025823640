#include "server/tool_use.h"

#include <fmt/format.h>

#include "chat/tool_call_grammar.h"
#include "server/api_error.h"
#include "util/error.h"

namespace hearth::server {

namespace {

using nlohmann::json;

std::shared_ptr<const Grammar> forced_calls(const ParsedRequest& pr, const json& tools,
                                            chat::ToolFormat format) {
  const char* param = "tool_choice";
  if (format == chat::ToolFormat::None)
    bad_param(param,
              "tool_choice forces a call, but this server reads no tool-call format "
              "(--tool-format none)");
  if (pr.grammar)
    bad_param(param,
              "tool_choice forces a call, and response_format (or json_schema, grammar) "
              "also constrains the reply; send only one");
  std::optional<std::string> only;
  if (pr.tool_use.choice == ToolChoice::Named) only = pr.tool_use.name;
  try {
    return std::make_shared<const Grammar>(
        Grammar::parse(chat::tool_call_gbnf(format, tools, only, pr.tool_use.parallel)));
  } catch (const Error& e) {
    throw ApiError(400, fmt::format("tools: {}", e.what()), "invalid_request_error", "tools",
                   "invalid_value");
  }
}

// tool_choice "auto": a lazy grammar, so a call the model opens is well formed; free text is
// untouched. Left out when the reply is already constrained (response_format), the format has
// no opener, or a function's schema is one the converter refuses (the calls are then read
// unconstrained rather than the request refused: "auto" promises no shape).
void constrain_opened_calls(ParsedRequest& pr, const json& tools, chat::ToolFormat format) {
  const std::optional<std::string> trigger = chat::tool_call_trigger(format);
  if (pr.grammar || !trigger) return;
  try {
    pr.grammar = std::make_shared<const Grammar>(
        Grammar::parse(chat::tool_call_gbnf(format, tools, std::nullopt, pr.tool_use.parallel)));
    pr.grammar_trigger = *trigger;
  } catch (const Error&) {
  }
}

}  // namespace

std::unique_ptr<ToolCallReader> plan_tool_use(ParsedRequest& pr, chat::ToolFormat format) {
  const ToolChoice choice = pr.tool_use.choice;
  if (choice == ToolChoice::None) return nullptr;
  const json tools = json::parse(pr.tools.dump());  // the request's order is the template's
  if (choice == ToolChoice::Required || choice == ToolChoice::Named) {
    pr.grammar = forced_calls(pr, tools, format);
    pr.grammar_param = "tool_choice";
  }
  if (format == chat::ToolFormat::None) return nullptr;
  if (choice == ToolChoice::Auto) constrain_opened_calls(pr, tools, format);
  pr.render_special = chat::tool_format_needs_special_tokens(format);
  return std::make_unique<ToolCallReader>(format, tools);
}

}  // namespace hearth::server
