#include "util/system.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace hearth {

std::optional<size_t> available_memory_bytes() {
  std::FILE* f = std::fopen("/proc/meminfo", "r");
  if (!f) return std::nullopt;
  char line[256];
  std::optional<size_t> out;
  while (std::fgets(line, sizeof line, f)) {
    unsigned long long kb = 0;
    if (std::sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
      out = static_cast<size_t>(kb) * 1024;
      break;
    }
  }
  std::fclose(f);
  return out;
}

std::optional<size_t> parse_byte_size(const std::string& text) {
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
    ++i;
  if (i == 0) return std::nullopt;
  double value = 0;
  try {
    value = std::stod(text.substr(0, i));
  } catch (...) {
    return std::nullopt;
  }
  std::string unit = text.substr(i);
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  double mult = 1;
  if (unit.empty() || unit == "B") {
    mult = 1;
  } else if (unit == "K" || unit == "KB" || unit == "KIB") {
    mult = 1024.0;
  } else if (unit == "M" || unit == "MB" || unit == "MIB") {
    mult = 1024.0 * 1024;
  } else if (unit == "G" || unit == "GB" || unit == "GIB") {
    mult = 1024.0 * 1024 * 1024;
  } else if (unit == "T" || unit == "TB" || unit == "TIB") {
    mult = 1024.0 * 1024 * 1024 * 1024;
  } else {
    return std::nullopt;
  }
  const double bytes = value * mult;
  if (!std::isfinite(bytes) || bytes < 0 || bytes > 1e18) return std::nullopt;
  return static_cast<size_t>(bytes);
}

}  // namespace hearth
