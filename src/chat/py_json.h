// Python's json.dumps over template values: what transformers' `tojson` filter prints
// (json.dumps(x, ensure_ascii=..., indent=..., separators=..., sort_keys=...)).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "chat/value.h"
#include "util/error.h"

namespace hearth::chat {

struct JsonDumpOptions {
  // None: everything on one line. Otherwise a newline plus this string per nesting level
  // (Python turns indent=N into N spaces).
  std::optional<std::string> indent;
  // Python's defaults: ", " on one line, "," when indenting (no trailing spaces); ": " always.
  std::optional<std::string> item_separator;
  std::string key_separator = ": ";
  bool sort_keys = false;
  // \uXXXX (surrogate pairs above U+FFFF) for every code point outside ' '..'~'.
  bool ensure_ascii = false;
  // Throws JsonTooLarge once the text grows past this (a hostile indent or deep nesting).
  size_t max_bytes = SIZE_MAX;
};

// The output limit was hit (a resource limit, not a property of the value).
class JsonTooLarge : public hearth::Error {
 public:
  using hearth::Error::Error;
};

// Throws hearth::Error (Python's TypeError wording) for values JSON cannot hold: generators,
// namespaces, callables, undefined.
std::string py_json_dumps(const Value& v, const JsonDumpOptions& options = {});

}  // namespace hearth::chat
