// `hearth`: the single binary. Subcommands live one per file (cmd_*.cpp).
#include <cstdio>
#include <exception>

#include "cli/commands.h"
#include "util/error.h"

int main(int argc, char** argv) {
  CLI::App app{"hearth — a local LLM chat server that keeps every conversation warm"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "hearth 0.1.0");
  hearth::cli::Context ctx;
  hearth::cli::add_run(app, ctx);
  hearth::cli::add_inspect(app, ctx);
  hearth::cli::add_synth(app, ctx);
  hearth::cli::add_bench(app, ctx);
  hearth::cli::add_tokenize(app, ctx);
  hearth::cli::add_serve(app, ctx);
  hearth::cli::add_pull(app, ctx);
  hearth::cli::add_template(app, ctx);
  hearth::cli::add_chat(app, ctx);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const hearth::Error& e) {
    std::fprintf(stderr, "hearth: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hearth: internal error: %s\n", e.what());
    return 2;
  }
  return ctx.exit_code;
}
