// `hearth serve` (being built: hearth issue 9).
#include "cli/commands.h"
#include "util/error.h"

namespace hearth::cli {

void add_serve(CLI::App& app, Context& /*ctx*/) {
  auto* cmd = app.add_subcommand("serve", "(not yet available)");
  cmd->callback([] { fail("hearth serve is not built yet"); });
}

}  // namespace hearth::cli
