// How deeply a JSON text nests, read without parsing it. Every JSON text that reaches hearth from
// outside (request bodies, tool-call arguments, a model's tool calls) is checked against one
// limit before it is parsed: nlohmann's parser and destructor are iterative, but copying,
// dumping, comparing and every walk over a value (schemas to grammars, templates' tojson) recurse
// once per level, so an unbounded depth is an unbounded stack.
#pragma once

#include <cstddef>
#include <string_view>

namespace hearth {

// Steps through JSON text byte by byte, telling brackets outside strings from the rest (the
// one scanner for nesting: json_nesting_depth, and the tool-call parsers' value extents).
class JsonBrackets {
 public:
  // +1 for an opening bracket ([ or {) outside a string, -1 for a closing one, else 0.
  int step(char c) {
    if (in_string_) {
      if (escaped_)
        escaped_ = false;
      else if (c == '\\')
        escaped_ = true;
      else if (c == '"')
        in_string_ = false;
      return 0;
    }
    if (c == '"') in_string_ = true;
    return c == '[' || c == '{' ? 1 : c == ']' || c == '}' ? -1 : 0;
  }

 private:
  bool in_string_ = false;
  bool escaped_ = false;
};

// Deeper than any real request (a tool's parameter schema nests a few levels per property).
inline constexpr size_t kMaxJsonDepth = 128;

// The deepest nesting of arrays and objects in `text` (brackets inside strings do not count),
// stopping as soon as it exceeds `cap` (then some value > cap is returned). Invalid JSON is
// measured as far as its brackets go; whether it parses is the parser's business.
size_t json_nesting_depth(std::string_view text, size_t cap = kMaxJsonDepth);

inline bool json_depth_ok(std::string_view text, size_t max_depth = kMaxJsonDepth) {
  return json_nesting_depth(text, max_depth) <= max_depth;
}

}  // namespace hearth
