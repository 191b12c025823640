// Chat templates: a Jinja2 interpreter with the semantics Hugging Face's apply_chat_template
// uses (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols, tojson as
// Python json.dumps, raise_exception, strftime_now). Parse once, render many times; a parsed
// Template is immutable and may be rendered from several threads at once.
//
//   auto t = chat::Template::parse(source);             // throws TemplateError (line:column)
//   chat::Rendered r = t.render(context, options);        // throws TemplateError
//
// The context is an ordered JSON object (key order matters to tojson); its keys become the
// template's variables (JSON null is Python None).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <ctime>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/template_error.h"
#include "chat/value.h"

namespace hearth::chat {

// Bounds that keep a hostile template from hanging or exhausting the process.
struct Limits {
  size_t max_output_bytes = 8u << 20;      // the rendered text, and any string built on the way
  uint64_t max_loop_iterations = 1000000;  // all for-loop iterations of one render together
  int max_call_depth = 64;                 // nested macro calls
  uint64_t max_work = 200000000;           // bytes and items created, iterations (a CPU budget)
};

struct RenderOptions {
  Limits limits;
  // strftime_now's clock (local time); unset: the current time.
  std::function<std::tm()> clock;
  // Top-level context strings that are special tokens (their bytes may hold special tokens).
  std::vector<std::string> special_variables = {"bos_token", "eos_token"};
};

struct Rendered {
  std::string text;
  // Byte ranges [first, second) of `text` that came from the template's own literal text (or
  // the special_variables); only there may special-token text be parsed as special tokens.
  std::vector<std::pair<size_t, size_t>> special_ok;
};

struct Program;
// Template variables as values (see Value::from_json), in the order given.
using Variables = std::vector<std::pair<std::string, Value>>;

class Template {
 public:
  static Template parse(std::string source);
  Rendered render(const nlohmann::ordered_json& context, const RenderOptions& options = {}) const;
  // The same with the variables already converted (no JSON copy; the formatter's path).
  Rendered render(Variables variables, const RenderOptions& options = {}) const;
  const std::string& source() const { return source_; }

 private:
  std::string source_;
  std::shared_ptr<const Program> program_;
};

// A clock fixed at one local time (tests, reproducible renders).
std::function<std::tm()> fixed_clock(int year, int month, int day, int hour, int minute,
                                     int second);

}  // namespace hearth::chat
