#include "server/json_fields.h"

#include <fmt/format.h>

#include <cmath>

#include "server/api_error.h"

namespace hearth::server {

using nlohmann::json;

const json* field(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

void wrong_type(const std::string& param, const char* expected, const json& v) {
  bad_param(param, fmt::format("'{}' must be {}, got {}", param, expected, v.type_name()),
            "invalid_type");
}

std::optional<bool> get_bool(const json& obj, const char* key, const std::string& param) {
  const json* v = field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) wrong_type(param.empty() ? key : param, "a boolean", *v);
  return v->get<bool>();
}

std::optional<std::string> get_string(const json& obj, const char* key, const std::string& param) {
  const json* v = field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_string()) wrong_type(param.empty() ? key : param, "a string", *v);
  return v->get<std::string>();
}

std::optional<double> get_number(const json& obj, const char* key) {
  const json* v = field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_number()) wrong_type(key, "a number", *v);
  const double d = v->get<double>();
  if (!std::isfinite(d)) bad_param(key, fmt::format("'{}' must be finite", key));
  return d;
}

std::optional<int64_t> get_int(const json& obj, const char* key) {
  const json* v = field(obj, key);
  if (!v) return std::nullopt;
  if (v->is_number_integer()) {
    if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      bad_param(key, fmt::format("'{}' is out of range", key));
    return v->get<int64_t>();
  }
  if (v->is_number_float()) {
    const double d = v->get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e15)
      return static_cast<int64_t>(d);
  }
  wrong_type(key, "an integer", *v);
}

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

}  // namespace

const nlohmann::json& required(const nlohmann::json& obj, const char* key,
                               const std::string& param) {
  const json* v = field(obj, key);
  if (!v) bad_param(param, fmt::format("'{}' is required", param), "missing_required_parameter");
  return *v;
}

const nlohmann::json& required_object(const nlohmann::json& obj, const char* key,
                                      const std::string& param) {
  const nlohmann::json& v = required(obj, key, param);
  if (!v.is_object()) wrong_type(param, "an object", v);
  return v;
}

std::string required_name(const nlohmann::json& obj, const std::string& param) {
  const nlohmann::json& v = required(obj, "name", param);
  if (!v.is_string()) wrong_type(param, "a string", v);
  const std::string name = v.get<std::string>();
  if (!valid_name(name))
    bad_param(param, fmt::format("'{}' must be 1 to 64 letters, digits, '_' or '-', got '{}'",
                                 param, name.substr(0, 80)));
  return name;
}

}  // namespace hearth::server
