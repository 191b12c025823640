// Reading typed fields of a request body, with errors naming the parameter (400 invalid_type).
// Absent and null read the same: many clients send explicit nulls for defaults.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace hearth::server {

// The value of `key` in `obj`, or nullptr when absent or null.
const nlohmann::json* field(const nlohmann::json& obj, const char* key);

// 400 invalid_type: "'param' must be <expected>, got <type>".
[[noreturn]] void wrong_type(const std::string& param, const char* expected,
                             const nlohmann::json& v);

// `param` is the name errors use; it defaults to `key` (pass a path for nested objects).
std::optional<bool> get_bool(const nlohmann::json& obj, const char* key,
                             const std::string& param = "");
std::optional<std::string> get_string(const nlohmann::json& obj, const char* key,
                                      const std::string& param = "");
std::optional<double> get_number(const nlohmann::json& obj, const char* key);
// Integers; a float with an integral value (2.0) is accepted as JavaScript clients send them.
std::optional<int64_t> get_int(const nlohmann::json& obj, const char* key);

// Required members (400 missing_required_parameter naming `param`), of a type.
const nlohmann::json& required(const nlohmann::json& obj, const char* key,
                               const std::string& param);
const nlohmann::json& required_object(const nlohmann::json& obj, const char* key,
                                      const std::string& param);
// obj["name"]: a string of 1 to 64 letters, digits, '_' or '-' (OpenAI's rule for function
// and schema names).
std::string required_name(const nlohmann::json& obj, const std::string& param);

}  // namespace hearth::server
