#include "server/tool_params.h"

#include <fmt/format.h>

#include <string>
#include <vector>

#include "server/api_error.h"
#include "server/json_fields.h"

namespace hearth::server {

using nlohmann::json;

namespace {

void optional_object(const json& obj, const char* key, const std::string& param) {
  if (const json* v = field(obj, key); v && !v->is_object()) wrong_type(param, "an object", *v);
}

// {"type": "function", ...}: the one tool type there is.
void require_function_type(const json& obj, const std::string& where) {
  const json& t = required(obj, "type", where + ".type");
  if (!t.is_string()) wrong_type(where + ".type", "a string", t);
  if (t.get<std::string>() != "function")
    bad_param(where + ".type",
              fmt::format("'{}.type' must be 'function', got '{}'", where, t.get<std::string>()));
}

// The declared function names, in order.
std::vector<std::string> check_tool_list(const json& tools) {
  if (!tools.is_array()) wrong_type("tools", "an array", tools);
  std::vector<std::string> names;
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string where = fmt::format("tools[{}]", i);
    const json& t = tools[i];
    if (!t.is_object()) wrong_type(where, "an object", t);
    // The function first: its errors say more than a missing "type" beside it.
    const json& f = required_object(t, "function", where + ".function");
    names.push_back(required_name(f, where + ".function.name"));
    get_string(f, "description", where + ".function.description");
    optional_object(f, "parameters", where + ".function.parameters");
    get_bool(f, "strict", where + ".function.strict");
    require_function_type(t, where);
  }
  return names;
}

ToolUse check_tool_choice(const json& choice, const std::vector<std::string>& names) {
  ToolUse use;
  if (choice.is_string()) {
    const std::string c = choice.get<std::string>();
    if (c != "none" && c != "auto" && c != "required")
      bad_param("tool_choice",
                fmt::format("unknown tool_choice '{}' (none, auto, required, or "
                            "{{\"type\":\"function\",\"function\":{{\"name\":...}}}})",
                            c.substr(0, 80)));
    if (c == "required" && names.empty())
      bad_param("tool_choice", "tool_choice 'required' needs 'tools'");
    use.choice = c == "required"                 ? ToolChoice::Required
                 : c == "auto" && !names.empty() ? ToolChoice::Auto
                                                 : ToolChoice::None;
    return use;
  }
  if (!choice.is_object()) wrong_type("tool_choice", "a string or an object", choice);
  require_function_type(choice, "tool_choice");
  const json& f = required_object(choice, "function", "tool_choice.function");
  const std::string name = required_name(f, "tool_choice.function.name");
  for (const std::string& n : names)
    if (n == name) return {ToolChoice::Named, name, true};
  bad_param("tool_choice.function.name",
            fmt::format("tool_choice names '{}', which is not among 'tools'", name));
}

}  // namespace

ToolUse check_tools(const json& body) {
  std::vector<std::string> names;
  if (const json* tools = field(body, "tools")) names = check_tool_list(*tools);
  ToolUse use;
  if (const json* choice = field(body, "tool_choice"))
    use = check_tool_choice(*choice, names);
  else if (!names.empty())
    use.choice = ToolChoice::Auto;
  if (auto p = get_bool(body, "parallel_tool_calls")) use.parallel = *p;
  return use;
}

}  // namespace hearth::server
