// Each subcommand registers its options on the root app and sets `exit_code` when it runs.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "util/error.h"
#include "util/system.h"

namespace hearth::cli {

// A size option ("512M", "2G"); an Error naming the option when it is not a positive size.
inline size_t size_option(const char* option, const std::string& value) {
  const auto bytes = parse_byte_size(value);
  if (!bytes || *bytes == 0) fail("{} '{}' is not a size (e.g. 512M, 2G)", option, value);
  return *bytes;
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
