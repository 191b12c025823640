// Each subcommand registers its options on the root app and sets `exit_code` when it runs.
#pragma once

#include <CLI/CLI.hpp>

namespace hearth::cli {

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
