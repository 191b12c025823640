// llama-cli's sampling flags for `hearth run` (and any other command that samples).
#pragma once

#include <CLI/CLI.hpp>

#include "sampling/params.h"

namespace hearth::cli {

// Registers --temp, --dynatemp-range, --dynatemp-exp, --top-k, --top-p, --min-p, --typical,
// --top-nsigma, --xtc-probability, --xtc-threshold, --repeat-last-n, --repeat-penalty,
// --presence-penalty, --frequency-penalty, --dry-multiplier, --dry-base, --dry-allowed-length,
// --dry-penalty-last-n, --dry-sequence-breaker (repeatable; the first use replaces the
// defaults; "none" clears them), --mirostat, --mirostat-lr (eta), --mirostat-ent (tau),
// --logit-bias TOKEN(+/-)BIAS (repeatable; "15043-inf" bans), --seed (-1: random),
// --min-keep, --n-probs, --samplers "a;b;c" (or letters "kpt"). Values land in `params`,
// whose current values are the defaults shown; malformed values fail the parse with the flag
// named. Range checks happen in validate(params) / the Sampler constructor.
void add_sampler_options(CLI::App* app, SamplerParams& params);

}  // namespace hearth::cli
