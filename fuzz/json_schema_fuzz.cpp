// libFuzzer target: the JSON Schema → GBNF converter. Any JSON object must give a grammar
// or a hearth::Error, never another exception, a crash, a hang or unbounded recursion
// (recursive $ref, deep nesting, huge counts). A grammar must parse with the test recognizer
// (every rule defined, llama.cpp's escapes, groups nested at most 64 deep) and match a few
// small documents without meeting left recursion.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "sampling/gbnf_recognizer.h"
#include "sampling/json_schema_grammar.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json schema =
      nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (!schema.is_object()) return 0;  // also the parse failures (discarded values)
  try {
    const std::string g = hearth::json_schema_to_gbnf(schema);
    if (g.rfind("root ::= ", 0) != 0 || g.back() != '\n') std::abort();
    try {
      const hearth::test::GbnfRecognizer rec(g);
      for (const char* doc : {"{}", "[]", "null", "0", "\"\"", R"({"a":[1,"b"]})"})
        (void)rec.accepts(doc);
    } catch (const std::runtime_error& e) {
      std::fprintf(stderr, "bad grammar: %s\n%s", e.what(), g.c_str());
      std::abort();
    }
  } catch (const hearth::Error&) {
    // an invalid or unsupported schema: reported to the client as a 400
  }
  return 0;
}
