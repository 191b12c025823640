// libFuzzer target: the JSON Schema → GBNF converter. Any JSON object must give a grammar
// (starting with the root rule) or a hearth::Error, never another exception, a crash, a hang or
// unbounded recursion (recursive $ref, deep nesting, huge counts).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "sampling/json_schema_grammar.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json schema =
      nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (!schema.is_object()) return 0;  // also the parse failures (discarded values)
  try {
    const std::string g = hearth::json_schema_to_gbnf(schema);
    if (g.rfind("root ::= ", 0) != 0 || g.back() != '\n') std::abort();
  } catch (const hearth::Error&) {
    // an invalid or unsupported schema: reported to the client as a 400
  }
  return 0;
}
