#include "cli/spec_options.h"

#include "util/error.h"

namespace hearth::cli {

void add_spec_options(CLI::App* app, SpecFlags& flags) {
  app->add_option("--spec", flags.mode,
                  "Speculative decoding: off, ngram (drafts from the prompt and the reply "
                  "itself; the default) or draft (a draft model); output unchanged, greedy and "
                  "sampled");
  app->add_option("--model-draft", flags.model_draft,
                  "Draft model for --spec draft (GGUF, same vocabulary)");
  app->add_option("--draft-max", flags.options.draft_max, "Most tokens drafted at once")
      ->capture_default_str()
      ->check(CLI::Range(0, 64));
  app->add_option("--draft-min", flags.options.draft_min, "Fewest drafted tokens worth verifying")
      ->capture_default_str()
      ->check(CLI::Range(0, 64));
}

SpecOptions spec_options(const SpecFlags& flags) {
  SpecOptions o = flags.options;
  const std::string mode = !flags.mode.empty()         ? flags.mode
                           : flags.model_draft.empty() ? "ngram"
                                                       : "draft";
  if (mode == "off")
    o.mode = SpecMode::Off;
  else if (mode == "ngram")
    o.mode = SpecMode::Ngram;
  else if (mode == "draft")
    o.mode = SpecMode::Draft;
  else
    fail("--spec '{}': expected off, ngram or draft", mode);
  if (o.mode == SpecMode::Draft && flags.model_draft.empty())
    fail("--spec draft needs a draft model (--model-draft FILE)");
  if (o.mode != SpecMode::Draft && !flags.model_draft.empty())
    fail("--model-draft is used only with --spec draft (not '{}')", mode);
  return o;
}

}  // namespace hearth::cli
