// `hearth pull` (being built: hearth issue 9).
#include "cli/commands.h"
#include "util/error.h"

namespace hearth::cli {

void add_pull(CLI::App& app, Context& /*ctx*/) {
  auto* cmd = app.add_subcommand("pull", "(not yet available)");
  cmd->callback([] { fail("hearth pull is not built yet"); });
}

}  // namespace hearth::cli
