// The sampler stages, each a transform of the candidate set with llama.cpp's semantics. Every
// truncating stage keeps at least `min_keep` candidates (and at least one). Items stay either
// in token order or in the total order `better`, so results never depend on the sort
// implementation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "sampling/candidates.h"
#include "sampling/rng.h"

namespace hearth {

// Keep the k best (k <= 0: no-op).
void apply_top_k(Candidates& c, int32_t k, size_t min_keep);
// Keep the smallest best-first prefix whose probability reaches p (p >= 1: no-op).
void apply_top_p(Candidates& c, float p, size_t min_keep);
// Keep tokens whose probability is at least p times the best one's (p <= 0: no-op).
void apply_min_p(Candidates& c, float p, size_t min_keep);
// Locally typical sampling: keep the tokens whose surprise is closest to the entropy until
// their probability exceeds p (p >= 1: no-op).
void apply_typical(Candidates& c, float p, size_t min_keep);
// Keep logits within n standard deviations of the best (over finite logits; n <= 0: no-op).
void apply_top_n_sigma(Candidates& c, float n, size_t min_keep);
// Exclude Top Choices: with chance `probability`, drop every token whose probability is at
// least `threshold` except the least likely of them (threshold > 0.5 or probability <= 0:
// no-op, and no random draw).
void apply_xtc(Candidates& c, float probability, float threshold, size_t min_keep, SamplerRng& rng);
// logit / t; with dynatemp_range > 0 the temperature is chosen from
// [t - range, t + range] by the normalised entropy raised to `exponent`. t <= 0 (or a
// dynamic temperature of 0) keeps only the best token.
void apply_temperature(Candidates& c, float t, float dynatemp_range, float dynatemp_exponent);

// Softmax of the items' logits in item order, into `out` (all -infinity: uniform).
void softmax(std::span<const Candidate> items, std::vector<float>& out);

// The best candidate (total order `better`).
int32_t pick_best(Candidates& c);
// Index into c.items() drawn from softmax(logits) with the uniform number u in [0, 1).
size_t draw_index(Candidates& c, double u);

// Mirostat (v1) and Mirostat 2.0 with state mu (start at 2 * tau): truncate, draw, update mu.
int32_t sample_mirostat_v1(Candidates& c, float tau, float eta, int32_t n_vocab, float& mu,
                           SamplerRng& rng);
int32_t sample_mirostat_v2(Candidates& c, float tau, float eta, float& mu, SamplerRng& rng);

}  // namespace hearth
