#include "sampling/params.h"

#include <cmath>

#include "util/error.h"

namespace hearth {
namespace {

struct StageName {
  std::string_view name;
  SamplerStage stage;
};

// Canonical names first: sampler_stage_name() returns the first match.
constexpr StageName kStageNames[] = {
    {"penalties", SamplerStage::Penalties},
    {"dry", SamplerStage::Dry},
    {"top_n_sigma", SamplerStage::TopNSigma},
    {"top_k", SamplerStage::TopK},
    {"typ_p", SamplerStage::TypicalP},
    {"top_p", SamplerStage::TopP},
    {"min_p", SamplerStage::MinP},
    {"xtc", SamplerStage::Xtc},
    {"temperature", SamplerStage::Temperature},
    {"top-n-sigma", SamplerStage::TopNSigma},
    {"top-k", SamplerStage::TopK},
    {"typical_p", SamplerStage::TypicalP},
    {"typical-p", SamplerStage::TypicalP},
    {"typical", SamplerStage::TypicalP},
    {"typ-p", SamplerStage::TypicalP},
    {"typ", SamplerStage::TypicalP},
    {"top-p", SamplerStage::TopP},
    {"nucleus", SamplerStage::TopP},
    {"min-p", SamplerStage::MinP},
    {"temp", SamplerStage::Temperature},
};

void check_finite(float v, const char* name) {
  if (!std::isfinite(v)) fail_param(name, "{} must be a finite number, got {}", name, v);
}

void check_range(float v, float lo, float hi, const char* name) {
  check_finite(v, name);
  if (v < lo || v > hi) fail_param(name, "{} must be between {} and {}, got {}", name, lo, hi, v);
}

void check_at_least(float v, float lo, const char* name) {
  check_finite(v, name);
  if (v < lo) fail_param(name, "{} must be >= {}, got {}", name, lo, v);
}

}  // namespace

const char* sampler_stage_name(SamplerStage s) {
  for (const auto& n : kStageNames)
    if (n.stage == s) return n.name.data();
  return "?";
}

std::optional<SamplerStage> sampler_stage_from_name(std::string_view name) {
  for (const auto& n : kStageNames)
    if (n.name == name) return n.stage;
  return std::nullopt;
}

std::optional<SamplerStage> sampler_stage_from_char(char c) {
  switch (c) {
    case 'e':
      return SamplerStage::Penalties;
    case 'd':
      return SamplerStage::Dry;
    case 's':
      return SamplerStage::TopNSigma;
    case 'k':
      return SamplerStage::TopK;
    case 'y':
      return SamplerStage::TypicalP;
    case 'p':
      return SamplerStage::TopP;
    case 'm':
      return SamplerStage::MinP;
    case 'x':
      return SamplerStage::Xtc;
    case 't':
      return SamplerStage::Temperature;
    default:
      return std::nullopt;
  }
}

std::vector<SamplerStage> parse_sampler_stages(std::string_view text, std::string_view param) {
  std::vector<SamplerStage> out;
  // A single known name ("top_k") is a name; a run of letters with no separator that is not a
  // name is llama.cpp's letter code ("kpt").
  const bool letters =
      text.find(';') == std::string_view::npos && !sampler_stage_from_name(text) && !text.empty();
  if (letters) {
    for (char c : text) {
      auto s = sampler_stage_from_char(c);
      if (!s)
        fail_param(std::string(param), "{}: unknown sampler letter '{}' in \"{}\" (e d s k y p m x t)", param, c,
                   text);
      out.push_back(*s);
    }
    return out;
  }
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(';', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view name = text.substr(start, end - start);
    if (!name.empty()) {
      auto s = sampler_stage_from_name(name);
      if (!s)
        fail_param(std::string(param),
                   "{}: unknown sampler \"{}\" (penalties, dry, top_n_sigma, top_k, typ_p, top_p, "
                   "min_p, xtc, temperature)",
                   param, name);
      out.push_back(*s);
    }
    start = end + 1;
  }
  return out;
}

std::vector<SamplerStage> default_sampler_stages() {
  return {SamplerStage::Penalties, SamplerStage::Dry,      SamplerStage::TopNSigma,
          SamplerStage::TopK,      SamplerStage::TypicalP, SamplerStage::TopP,
          SamplerStage::MinP,      SamplerStage::Xtc,      SamplerStage::Temperature};
}

float effective_dry_base(const SamplerParams& p) {
  return p.dry_base < 1.0f ? 1.75f : p.dry_base;
}

void validate(const SamplerParams& p) {
  check_finite(p.temperature, "temperature");
  check_at_least(p.dynatemp_range, 0.0f, "dynatemp_range");
  check_at_least(p.dynatemp_exponent, 0.0f, "dynatemp_exponent");
  check_range(p.top_p, 0.0f, 1.0f, "top_p");
  check_range(p.min_p, 0.0f, 1.0f, "min_p");
  check_range(p.typical_p, 0.0f, 1.0f, "typical_p");
  check_finite(p.top_n_sigma, "top_n_sigma");
  check_range(p.xtc_probability, 0.0f, 1.0f, "xtc_probability");
  check_range(p.xtc_threshold, 0.0f, 1.0f, "xtc_threshold");
  if (p.repeat_last_n < -1)
    fail_param("repeat_last_n", "repeat_last_n must be >= -1, got {}", p.repeat_last_n);
  check_finite(p.repeat_penalty, "repeat_penalty");
  if (p.repeat_penalty <= 0.0f)
    fail_param("repeat_penalty", "repeat_penalty must be > 0 (1 disables it), got {}",
               p.repeat_penalty);
  check_finite(p.presence_penalty, "presence_penalty");
  check_finite(p.frequency_penalty, "frequency_penalty");
  check_at_least(p.dry_multiplier, 0.0f, "dry_multiplier");
  check_finite(p.dry_base, "dry_base");
  if (p.dry_allowed_length < 0)
    fail_param("dry_allowed_length", "dry_allowed_length must be >= 0, got {}",
               p.dry_allowed_length);
  if (p.dry_penalty_last_n < -1)
    fail_param("dry_penalty_last_n", "dry_penalty_last_n must be >= -1, got {}",
               p.dry_penalty_last_n);
  for (const auto& b : p.dry_sequence_breakers)
    if (b.empty())
      fail_param("dry_sequence_breakers",
                 "dry_sequence_breakers: a breaker must not be the empty string");
  if (p.mirostat < 0 || p.mirostat > 2)
    fail_param("mirostat", "mirostat must be 0, 1 or 2, got {}", p.mirostat);
  check_at_least(p.mirostat_tau, 0.0f, "mirostat_tau");
  check_at_least(p.mirostat_eta, 0.0f, "mirostat_eta");
  for (const auto& b : p.logit_bias) {
    if (b.token < 0) fail_param("logit_bias", "logit_bias: token id {} is negative", b.token);
    if (std::isnan(b.bias) || b.bias == INFINITY)
      fail_param("logit_bias",
                 "logit_bias: the bias for token {} must be a finite number or false, got {}",
                 b.token, b.bias);
  }
  if (p.min_keep < 0) fail_param("min_keep", "min_keep must be >= 0, got {}", p.min_keep);
  if (p.n_probs < 0) fail_param("n_probs", "n_probs must be >= 0, got {}", p.n_probs);
}

}  // namespace hearth
