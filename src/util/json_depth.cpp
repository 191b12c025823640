#include "util/json_depth.h"

namespace hearth {

size_t json_nesting_depth(std::string_view text, size_t cap) {
  size_t depth = 0, deepest = 0;
  JsonBrackets brackets;
  for (const char c : text) {
    const int step = brackets.step(c);
    if (step > 0 && ++depth > deepest && (deepest = depth) > cap) return deepest;
    if (step < 0 && depth > 0) --depth;
  }
  return deepest;
}

}  // namespace hearth
