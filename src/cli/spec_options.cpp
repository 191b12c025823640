#include "cli/spec_options.h"

#include "util/error.h"

namespace hearth::cli {

void add_spec_options(CLI::App* app, SpecFlags& flags) {
  app->add_option("--spec", flags.mode,
                  "Speculative decoding: off, or ngram (drafts from the prompt and the reply "
                  "itself; output unchanged, greedy and sampled)")
      ->capture_default_str();
  app->add_option("--draft-max", flags.options.draft_max, "Most tokens drafted at once")
      ->capture_default_str()
      ->check(CLI::Range(0, 64));
  app->add_option("--draft-min", flags.options.draft_min, "Fewest drafted tokens worth verifying")
      ->capture_default_str()
      ->check(CLI::Range(0, 64));
}

SpecOptions spec_options(const SpecFlags& flags) {
  SpecOptions o = flags.options;
  if (flags.mode == "off")
    o.mode = SpecMode::Off;
  else if (flags.mode == "ngram")
    o.mode = SpecMode::Ngram;
  else
    fail("--spec '{}': expected off or ngram", flags.mode);
  return o;
}

}  // namespace hearth::cli
