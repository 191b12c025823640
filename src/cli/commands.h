// Each subcommand registers its options on the root app and sets `exit_code` when it runs.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "ops/attention.h"
#include "quant/types.h"
#include "util/error.h"
#include "util/system.h"

namespace hearth::cli {

// A size option ("512M", "2G"); an Error naming the option when it is not a positive size.
inline size_t size_option(const char* option, const std::string& value) {
  const auto bytes = parse_byte_size(value);
  if (!bytes || *bytes == 0) fail("{} '{}' is not a size (e.g. 512M, 2G)", option, value);
  return *bytes;
}

// A KV cache type option ("f16", "q8_0", ...); an Error listing the types a KV cache can use
// otherwise.
inline TensorType kv_type_option(const std::string& value) {
  const auto t = type_from_name(value);
  if (!t || !ops::kv_type_supported(*t)) fail("unknown KV type '{}' (f32, f16, q8_0, q4_0)", value);
  return *t;
}

struct Context {
  int exit_code = 0;
};

void add_run(CLI::App& app, Context& ctx);
void add_inspect(CLI::App& app, Context& ctx);
void add_synth(CLI::App& app, Context& ctx);
void add_bench(CLI::App& app, Context& ctx);
void add_tokenize(CLI::App& app, Context& ctx);
void add_serve(CLI::App& app, Context& ctx);
void add_pull(CLI::App& app, Context& ctx);
void add_template(CLI::App& app, Context& ctx);
void add_chat(CLI::App& app, Context& ctx);

}  // namespace hearth::cli
