// `hearth pull OWNER/REPO[/FILE.gguf]`: download a GGUF from Hugging Face ($HF_ENDPOINT
// overrides the site) into the model directory; prints the local path on stdout.
#include <cstdio>

#include "cli/commands.h"
#include "download/downloader.h"

namespace hearth::cli {

void add_pull(CLI::App& app, Context& ctx) {
  struct Options {
    std::string spec;
    std::string dir;
    std::string revision = "main";
    std::string sha256;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "pull", "Download a GGUF model from Hugging Face (resumable; size and SHA-256 checked)");
  cmd->add_option("model", o->spec, "OWNER/REPO or OWNER/REPO/FILE.gguf")->required();
  cmd->add_option("--dir", o->dir,
                  "Model directory (default: $HEARTH_MODEL_DIR or ~/.cache/hearth/models)");
  cmd->add_option("--revision", o->revision, "Branch, tag or commit")->capture_default_str();
  cmd->add_option("--sha256", o->sha256, "Expected SHA-256 of the file");
  cmd->callback([&ctx, o] {
    download::PullOptions po;
    po.model_dir = o->dir;
    po.revision = o->revision;
    po.expect_sha256 = o->sha256;
    const std::string path = download::pull(download::parse_pull_spec(o->spec), po);
    std::printf("%s\n", path.c_str());
    ctx.exit_code = 0;
  });
}

}  // namespace hearth::cli
