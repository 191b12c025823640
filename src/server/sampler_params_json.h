// Sampler parameters from a request body: llama-server's names and OpenAI's (the HTTP side of
// sampling/params.h, so it lives with the server).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "sampling/params.h"
#include "sampling/vocab_access.h"

namespace hearth {

// Reads the sampler fields of `body` over `defaults`; other keys are ignored (the server reads
// them). null counts as absent. Accepted:
//   llama-server: temperature, dynatemp_range, dynatemp_exponent, top_k, top_p, min_p,
//     typical_p, top_n_sigma, xtc_probability, xtc_threshold, repeat_last_n, repeat_penalty,
//     presence_penalty, frequency_penalty, dry_multiplier, dry_base (< 1 → 1.75),
//     dry_allowed_length, dry_penalty_last_n, dry_sequence_breakers (non-empty array of
//     strings), mirostat, mirostat_tau, mirostat_eta, seed (-1 or 4294967295: random), min_keep,
//     n_probs, samplers (array of names, or a string: "a;b" names or letters "kpt"),
//     logit_bias as [[token or "text", bias or false], ...] (false bans; text is tokenized and
//     every token of it gets the bias) or as OpenAI's {"token id" or "text": bias}.
//   OpenAI: logprobs (true → n_probs = max(top_logprobs, 1); an integer, as the legacy
//     completions API → n_probs = it), top_logprobs (0..20, needs logprobs). n_probs wins
//     when both are given.
// Throws hearth::Error naming the parameter on a wrong type or an out-of-range value (the
// result passes validate()).
SamplerParams sampler_params_from_json(const nlohmann::json& body, const VocabAccess& vocab,
                                       const SamplerParams& defaults = {});

}  // namespace hearth
