#include "chat/text_scan.h"

#include <algorithm>

namespace hearth::chat {

bool is_space(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

size_t partial_suffix(std::string_view s, std::string_view marker) {
  if (marker.empty()) return 0;
  const size_t max = std::min(s.size(), marker.size() - 1);
  for (size_t n = max; n > 0; --n)
    if (s.substr(s.size() - n) == marker.substr(0, n)) return n;
  return 0;
}

}  // namespace hearth::chat
