// Speculative decoding's flags, under llama-server's names where it has them: --spec
// off|ngram, --draft-max, --draft-min (engine/speculation.h).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "engine/speculation.h"

namespace hearth::cli {

struct SpecFlags {
  std::string mode = "ngram";
  SpecOptions options;
};

void add_spec_options(CLI::App* app, SpecFlags& flags);
// The options the flags say; an unknown --spec value is an Error naming it.
SpecOptions spec_options(const SpecFlags& flags);

}  // namespace hearth::cli
