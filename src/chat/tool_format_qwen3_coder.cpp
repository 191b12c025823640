// Qwen3-Coder: each call is a <tool_call> block holding one function, its parameters as elements
// with raw-text values:
//   <tool_call>
//   <function=get_weather>
//   <parameter=city>
//   Paris
//   </parameter>
//   <parameter=days>
//   3
//   </parameter>
//   </function>
//   </tool_call>
// A value loses one leading and one trailing newline (the template writes them around it). It is
// typed by the function's parameter schema from the request's tools: a "string" parameter, or
// one without a schema, stays text; any other type is read as JSON, and stays text when it does
// not parse. The arguments keep the order the parameters were written in.
#include <algorithm>
#include <map>

#include "chat/tool_parsers.h"
#include "util/json_depth.h"

namespace hearth::chat::tools {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

constexpr std::string_view kFunctionOpen = "<function=";
constexpr std::string_view kFunctionClose = "</function>";
constexpr std::string_view kParameterOpen = "<parameter=";
constexpr std::string_view kParameterClose = "</parameter>";

// Which parameters take their value as text, from the request's "tools" array.
class ParameterTypes {
 public:
  explicit ParameterTypes(const json& tools) {
    if (!tools.is_array()) return;
    for (const json& tool : tools) {
      // {"type": "function", "function": {…}}, or the function object itself.
      const json& fn = tool.contains("function") ? tool["function"] : tool;
      if (!fn.is_object() || !fn.contains("name") || !fn["name"].is_string()) continue;
      const json* params = fn.contains("parameters") ? &fn["parameters"] : nullptr;
      if (params && params->is_object() && params->contains("properties"))
        properties_[fn["name"].get<std::string>()] = (*params)["properties"];
    }
  }

  bool is_text(const std::string& function, const std::string& parameter) const {
    auto fn = properties_.find(function);
    if (fn == properties_.end() || !fn->second.is_object()) return true;
    auto schema = fn->second.find(parameter);
    if (schema == fn->second.end() || !schema->is_object()) return true;
    auto type = schema->find("type");
    if (type == schema->end()) return false;  // a schema without a type: read it as JSON
    if (type->is_string()) return *type == "string";
    if (type->is_array())  // ["string", "null"] and the like: text wins
      for (const json& t : *type)
        if (t == "string") return true;
    return false;
  }

 private:
  std::map<std::string, json> properties_;  // function name → its parameters' "properties"
};

ordered_json typed_value(std::string_view raw, bool is_text) {
  if (raw.starts_with('\n')) raw.remove_prefix(1);
  if (raw.ends_with('\n')) raw.remove_suffix(1);
  if (!is_text && json_depth_ok(raw)) {
    ordered_json v = ordered_json::parse(raw, nullptr, /*allow_exceptions=*/false);
    if (!v.is_discarded()) return v;
  }
  return std::string(raw);
}

// The text up to the '>' closing an element's opening tag (<function=NAME>), the tag consumed
// from `rest`; nullopt when there is none or the name is empty.
std::optional<std::string> tag_name(std::string_view& rest) {
  const size_t end = rest.find('>');
  if (end == std::string_view::npos) return std::nullopt;
  std::string name(trim(rest.substr(0, end)));
  rest.remove_prefix(end + 1);
  if (name.empty()) return std::nullopt;
  return name;
}

// One <function=…>…</function> at the start of `rest` (after whitespace), consumed from it.
std::optional<ToolCall> parse_function(std::string_view& rest, const ParameterTypes& types) {
  rest = trim(rest);
  if (!rest.starts_with(kFunctionOpen)) return std::nullopt;
  rest.remove_prefix(kFunctionOpen.size());
  auto name = tag_name(rest);
  if (!name) return std::nullopt;
  ordered_json args = ordered_json::object();
  while (true) {
    rest = trim(rest);
    if (rest.starts_with(kFunctionClose)) {
      rest.remove_prefix(kFunctionClose.size());
      break;
    }
    if (!rest.starts_with(kParameterOpen)) return std::nullopt;
    rest.remove_prefix(kParameterOpen.size());
    auto parameter = tag_name(rest);
    if (!parameter) return std::nullopt;
    // The value ends at its closing tag; the next parameter or the function's end also close it,
    // as the reference parser accepts: the model sometimes leaves out </parameter>.
    const size_t end = std::min(
        {rest.find(kParameterClose), rest.find(kParameterOpen), rest.find(kFunctionClose)});
    if (end == std::string_view::npos) return std::nullopt;
    args[*parameter] = typed_value(rest.substr(0, end), types.is_text(*name, *parameter));
    rest.remove_prefix(end);
    if (rest.starts_with(kParameterClose)) rest.remove_prefix(kParameterClose.size());
  }
  // Raw values may hold bytes that are not UTF-8: replaced, not thrown on.
  return ToolCall{std::move(*name), args.dump(-1, ' ', false, json::error_handler_t::replace), ""};
}

}  // namespace

std::unique_ptr<ToolCallParser> make_qwen3_coder_parser(const json& tools) {
  return std::make_unique<DelimitedCallParser>(
      "<tool_call>", "</tool_call>",
      [types =
           ParameterTypes(tools)](std::string_view body) -> std::optional<std::vector<ToolCall>> {
        std::vector<ToolCall> calls;
        while (!trim(body).empty()) {
          auto call = parse_function(body, types);
          if (!call) return std::nullopt;
          calls.push_back(std::move(*call));
        }
        return calls;
      });
}

}  // namespace hearth::chat::tools
