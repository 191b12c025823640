// Sampler parameters with llama-server's names and defaults, the stage order, and validation.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hearth {

// The stages a chain may list, in llama-server's vocabulary.
enum class SamplerStage { Penalties, Dry, TopNSigma, TopK, TypicalP, TopP, MinP, Xtc, Temperature };

// Canonical name ("penalties", "dry", "top_n_sigma", "top_k", "typ_p", "top_p", "min_p", "xtc",
// "temperature").
const char* sampler_stage_name(SamplerStage s);
// Canonical names and llama.cpp's aliases ("top-k", "nucleus", "typical", "temp", ...).
std::optional<SamplerStage> sampler_stage_from_name(std::string_view name);
// llama.cpp's one-letter codes: e=penalties d=dry s=top_n_sigma k=top_k y=typ_p p=top_p
// m=min_p x=xtc t=temperature.
std::optional<SamplerStage> sampler_stage_from_char(char c);
// "a;b;c" (names) or a run of one-letter codes ("edskypmxt"); `param` names the parameter in
// the error message.
std::vector<SamplerStage> parse_sampler_stages(std::string_view text, std::string_view param);
// penalties, dry, top_n_sigma, top_k, typ_p, top_p, min_p, xtc, temperature
std::vector<SamplerStage> default_sampler_stages();

struct LogitBias {
  int32_t token = 0;
  float bias = 0.0f;  // -infinity bans the token
};

// Disabled values follow llama-server: top_k <= 0, top_p >= 1, min_p <= 0, typical_p >= 1,
// top_n_sigma <= 0, xtc_probability <= 0 or xtc_threshold > 0.5, repeat_last_n == 0 or all
// three penalties neutral, dry_multiplier == 0 or dry_penalty_last_n == 0, mirostat == 0.
struct SamplerParams {
  float temperature = 0.8f;  // <= 0: greedy (argmax after bias, penalties, DRY; no randomness)
  float dynatemp_range = 0.0f;
  float dynatemp_exponent = 1.0f;
  int32_t top_k = 40;
  float top_p = 0.95f;
  float min_p = 0.05f;
  float typical_p = 1.0f;
  float top_n_sigma = -1.0f;
  float xtc_probability = 0.0f;
  float xtc_threshold = 0.1f;
  int32_t repeat_last_n = 64;  // -1: the whole history (llama-server: the context size)
  float repeat_penalty = 1.0f;
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  float dry_multiplier = 0.0f;
  float dry_base = 1.75f;  // values below 1 are reset to 1.75, as llama-server does
  int32_t dry_allowed_length = 2;
  int32_t dry_penalty_last_n = -1;  // -1: the whole history
  std::vector<std::string> dry_sequence_breakers = {"\n", ":", "\"", "*"};
  int32_t mirostat = 0;  // 0 off, 1 Mirostat, 2 Mirostat 2.0 (replaces the stage list)
  float mirostat_tau = 5.0f;
  float mirostat_eta = 0.1f;
  std::vector<LogitBias> logit_bias;  // applied before every stage; entries for one token add
  std::optional<uint64_t> seed;       // none: a random seed is drawn when the Sampler is built
  int32_t min_keep = 0;               // every truncating stage keeps at least this many tokens
  int32_t n_probs = 0;                // report the chosen token's logprob and the top n
  std::vector<SamplerStage> samplers = default_sampler_stages();
};

// Throws hearth::Error naming the first bad parameter (non-finite, out of range, unknown
// stage). Token ids in logit_bias are checked against the vocabulary when a Sampler is built.
void validate(const SamplerParams& p);

// dry_base as used: llama-server resets values below 1 to the default 1.75.
float effective_dry_base(const SamplerParams& p);

}  // namespace hearth
