#include "server/props.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>

#include "hearth_build_info.h"

namespace hearth::server {

using nlohmann::json;

namespace {

// JSON has no infinity or NaN (the sampling fields allow them, e.g. a penalty disabled as -inf);
// null keeps the reply parseable everywhere. A finite value is written as the shortest decimal
// that reads back as the same float: 0.8, not 0.800000011920929 (the float widened to double).
json number(float v) {
  if (!std::isfinite(v)) return nullptr;
  return std::strtod(fmt::format("{}", v).c_str(), nullptr);
}

json sampler_json(const SamplerParams& p) {
  json samplers = json::array();
  for (SamplerStage s : p.samplers) samplers.push_back(sampler_stage_name(s));
  return {{"temperature", number(p.temperature)},
          {"dynatemp_range", number(p.dynatemp_range)},
          {"dynatemp_exponent", number(p.dynatemp_exponent)},
          {"top_k", p.top_k},
          {"top_p", number(p.top_p)},
          {"min_p", number(p.min_p)},
          {"typical_p", number(p.typical_p)},
          {"top_n_sigma", number(p.top_n_sigma)},
          {"xtc_probability", number(p.xtc_probability)},
          {"xtc_threshold", number(p.xtc_threshold)},
          {"repeat_penalty", number(p.repeat_penalty)},
          {"repeat_last_n", p.repeat_last_n},
          {"presence_penalty", number(p.presence_penalty)},
          {"frequency_penalty", number(p.frequency_penalty)},
          {"dry_multiplier", number(p.dry_multiplier)},
          {"dry_base", number(p.dry_base)},
          {"dry_allowed_length", p.dry_allowed_length},
          {"dry_penalty_last_n", p.dry_penalty_last_n},
          {"dry_sequence_breakers", p.dry_sequence_breakers},
          {"mirostat", p.mirostat},
          {"mirostat_tau", number(p.mirostat_tau)},
          {"mirostat_eta", number(p.mirostat_eta)},
          // llama-server's "random" seed; requests may send it back (or -1).
          {"seed", p.seed ? *p.seed : uint64_t{0xFFFFFFFF}},
          {"min_keep", p.min_keep},
          {"n_probs", p.n_probs},
          {"samplers", samplers},
          // No limit of its own: a reply may fill the rest of the context (/v1/completions
          // alone defaults to OpenAI's 16).
          {"n_predict", -1},
          {"max_tokens", -1}};
}

}  // namespace

json props_json(const PropsInput& in) {
  return {{"model_alias", in.model.id},
          {"model_path", in.model.path},
          {"n_ctx", in.model.n_ctx},
          {"total_slots", in.total_slots},
          {"chat_template", in.chat_template},
          {"default_generation_settings",
           {{"n_ctx", in.model.n_ctx}, {"params", sampler_json(in.defaults)}}},
          {"build_info", build_info()},
          {"webui", in.webui}};
}

std::string build_info() {
  std::string s = "hearth " HEARTH_VERSION;
  if (*HEARTH_GIT_DESCRIBE) s += " (" HEARTH_GIT_DESCRIBE ")";
  return s;
}

}  // namespace hearth::server
