// Facts about the machine the process runs on.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace hearth {

// MemAvailable from /proc/meminfo, or nullopt where unknown.
std::optional<size_t> available_memory_bytes();

// "1073741824", "512M", "2G", "1.5GiB" → bytes; nullopt for anything else.
std::optional<size_t> parse_byte_size(const std::string& text);

}  // namespace hearth
