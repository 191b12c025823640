// Python str methods on UTF-8 text (code-point aware where Python is; case mapping is ASCII).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hearth::chat::py {

// Python str.isspace() for one code point.
bool is_space(uint32_t cp);
// Decodes the code point starting at s[i] (invalid bytes decode as themselves); advances i.
uint32_t decode(std::string_view s, size_t& i);

std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left,
                  bool right);
// sep empty optional: split on runs of whitespace. maxsplit < 0: no limit.
std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep,
                               int64_t maxsplit);
std::vector<std::string> rsplit(std::string_view s, const std::optional<std::string>& sep,
                                int64_t maxsplit);
std::vector<std::string> splitlines(std::string_view s, bool keepends = false);
std::string replace(std::string_view s, std::string_view from, std::string_view to, int64_t count);
std::string upper(std::string_view s);
std::string lower(std::string_view s);
std::string title(std::string_view s);
std::string capitalize(std::string_view s);
bool is_lower(std::string_view s);
bool is_upper(std::string_view s);
size_t count(std::string_view s, std::string_view sub);

}  // namespace hearth::chat::py
