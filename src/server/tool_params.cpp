#include "server/tool_params.h"

#include <fmt/format.h>

#include <string>
#include <vector>

#include "server/api_error.h"
#include "server/json_fields.h"

namespace hearth::server {

using nlohmann::json;

namespace {

// OpenAI's rule for function and schema names.
bool valid_name(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
          c == '-'))
      return false;
  return true;
}

const json& required(const json& obj, const char* key, const std::string& param) {
  const json* v = field(obj, key);
  if (!v) bad_param(param, fmt::format("'{}' is required", param), "missing_required_parameter");
  return *v;
}

const json& required_object(const json& obj, const char* key, const std::string& param) {
  const json& v = required(obj, key, param);
  if (!v.is_object()) wrong_type(param, "an object", v);
  return v;
}

std::string required_name(const json& obj, const std::string& param) {
  const json& v = required(obj, "name", param);
  if (!v.is_string()) wrong_type(param, "a string", v);
  const std::string name = v.get<std::string>();
  if (!valid_name(name))
    bad_param(param, fmt::format("'{}' must be 1 to 64 letters, digits, '_' or '-', got '{}'",
                                 param, name.substr(0, 80)));
  return name;
}

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

void check_tool_choice(const json& choice, const std::vector<std::string>& names) {
  if (choice.is_string()) {
    const std::string c = choice.get<std::string>();
    if (c != "none" && c != "auto" && c != "required")
      bad_param("tool_choice",
                fmt::format("unknown tool_choice '{}' (none, auto, required, or "
                            "{{\"type\":\"function\",\"function\":{{\"name\":...}}}})",
                            c.substr(0, 80)));
    if (c == "required" && names.empty())
      bad_param("tool_choice", "tool_choice 'required' needs 'tools'");
    return;
  }
  if (!choice.is_object()) wrong_type("tool_choice", "a string or an object", choice);
  require_function_type(choice, "tool_choice");
  const json& f = required_object(choice, "function", "tool_choice.function");
  const std::string name = required_name(f, "tool_choice.function.name");
  for (const std::string& n : names)
    if (n == name) return;
  bad_param("tool_choice.function.name",
            fmt::format("tool_choice names '{}', which is not among 'tools'", name));
}

}  // namespace

void check_tools(const json& body) {
  std::vector<std::string> names;
  if (const json* tools = field(body, "tools")) names = check_tool_list(*tools);
  if (const json* choice = field(body, "tool_choice")) check_tool_choice(*choice, names);
  get_bool(body, "parallel_tool_calls");
}

void check_response_format(const json& body) {
  const json* v = field(body, "response_format");
  if (!v) return;
  if (!v->is_object()) wrong_type("response_format", "an object", *v);
  const json& t = required(*v, "type", "response_format.type");
  if (!t.is_string()) wrong_type("response_format.type", "a string", t);
  const std::string type = t.get<std::string>();
  if (type == "json_schema") {
    const json& s = required_object(*v, "json_schema", "response_format.json_schema");
    required_name(s, "response_format.json_schema.name");
    get_string(s, "description", "response_format.json_schema.description");
    required_object(s, "schema", "response_format.json_schema.schema");
    get_bool(s, "strict", "response_format.json_schema.strict");
  } else if (type != "text" && type != "json_object") {
    bad_param("response_format.type",
              fmt::format("unknown response_format type '{}' (text, json_object, json_schema)",
                          type.substr(0, 80)));
  }
  // Well formed; constrained output is not implemented, so only plain text is served.
  if (type != "text")
    throw ApiError(400,
                   fmt::format("response_format type '{}' is not supported (only 'text')", type),
                   "invalid_request_error", "response_format", "unsupported_parameter");
}

}  // namespace hearth::server
