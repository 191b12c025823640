// Optional API key: "Authorization: Bearer KEY", compared in constant time.
#pragma once

#include <string>
#include <string_view>

namespace hearth::server {

// True when the two strings are equal; the time taken depends only on their lengths.
bool constant_time_equal(std::string_view a, std::string_view b);

// True when `authorization_header` carries `api_key` as a Bearer token (scheme case-insensitive).
// An empty api_key means no key is required.
bool authorized(const std::string& api_key, std::string_view authorization_header);

}  // namespace hearth::server
