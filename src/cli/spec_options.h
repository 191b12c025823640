// Speculative decoding's flags, under llama-server's names where it has them: --spec
// off|ngram|draft, --model-draft (-md), --draft-max, --draft-min (engine/speculation.h,
// engine/draft_model.h). A draft model given without --spec means --spec draft.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "engine/speculation.h"

namespace hearth::cli {

struct SpecFlags {
  std::string mode;  // empty: ngram, or draft with a draft model
  std::string model_draft;
  SpecOptions options;
};

void add_spec_options(CLI::App* app, SpecFlags& flags);
// The options the flags say; an unknown --spec value, or draft without a draft model (or a
// draft model with another mode), is an Error naming it.
SpecOptions spec_options(const SpecFlags& flags);

}  // namespace hearth::cli
