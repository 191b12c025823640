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

}  // namespace hearth::server
