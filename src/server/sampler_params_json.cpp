#include "server/sampler_params_json.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "util/error.h"

namespace hearth {
namespace {

using nlohmann::json;

const json* field(const json& body, const char* name) {
  auto it = body.find(name);
  if (it == body.end() || it->is_null()) return nullptr;
  return &*it;
}

float as_float(const json& v, const char* name) {
  if (!v.is_number()) fail_param(name, "{} must be a number, got {}", name, v.type_name());
  return v.get<float>();
}

int64_t as_int(const json& v, const char* name) {
  if (v.is_number_integer()) {
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      fail_param(name, "{} is too large: {}", name, v.dump());
    return v.get<int64_t>();
  }
  if (v.is_number_float()) {  // 40.0 is fine, 40.5 is not
    const double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e15)
      return static_cast<int64_t>(d);
    fail_param(name, "{} must be an integer, got {}", name, v.dump());
  }
  fail_param(name, "{} must be an integer, got {}", name, v.type_name());
}

int32_t as_int32(const json& v, const char* name) {
  const int64_t x = as_int(v, name);
  if (x < INT32_MIN || x > INT32_MAX) fail_param(name, "{} is out of range: {}", name, x);
  return static_cast<int32_t>(x);
}

void read_float(const json& body, const char* name, float& out) {
  if (const json* v = field(body, name)) out = as_float(*v, name);
}

void read_int(const json& body, const char* name, int32_t& out) {
  if (const json* v = field(body, name)) out = as_int32(*v, name);
}

float bias_value(const json& v) {
  if (v.is_boolean()) {
    if (v.get<bool>())
      fail_param("logit_bias", "logit_bias: a bias may be a number or false (ban), not true");
    return -INFINITY;
  }
  if (!v.is_number())
    fail_param("logit_bias", "logit_bias: a bias must be a number or false, got {}", v.type_name());
  return v.get<float>();
}

void add_bias(std::vector<LogitBias>& out, int64_t token, float bias, const VocabAccess& vocab) {
  if (token < 0 || (vocab.n_vocab > 0 && token >= vocab.n_vocab))
    fail_param("logit_bias",
               "logit_bias: token id {} is out of range (the vocabulary has {} tokens)", token,
               vocab.n_vocab);
  out.push_back({static_cast<int32_t>(token), bias});
}

void add_text_bias(std::vector<LogitBias>& out, std::string_view text, float bias,
                   const VocabAccess& vocab) {
  if (!vocab.tokenize)
    fail_param("logit_bias", "logit_bias: text keys need a tokenizer, none was given");
  for (int32_t t : vocab.tokenize(text)) add_bias(out, t, bias, vocab);
}

std::vector<LogitBias> read_logit_bias(const json& v, const VocabAccess& vocab) {
  std::vector<LogitBias> out;
  if (v.is_array()) {  // llama-server: [[token or "text", bias or false], ...]
    for (const auto& e : v) {
      if (!e.is_array() || e.size() != 2)
        fail_param("logit_bias",
                   "logit_bias: each entry of the array form must be [token, bias], got {}",
                   e.dump());
      const float bias = bias_value(e[1]);
      if (e[0].is_string()) {
        add_text_bias(out, e[0].get<std::string>(), bias, vocab);
      } else if (e[0].is_number_integer()) {
        add_bias(out, e[0].get<int64_t>(), bias, vocab);
      } else {
        fail_param("logit_bias", "logit_bias: a key must be a token id or a string, got {}",
                   e[0].type_name());
      }
    }
  } else if (v.is_object()) {  // OpenAI: {"15043": -100}; a non-numeric key is text
    for (const auto& [key, val] : v.items()) {
      const float bias = bias_value(val);
      int64_t id = 0;
      const char* end = key.data() + key.size();
      auto [ptr, ec] = std::from_chars(key.data(), end, id);
      if (ptr == end && !key.empty()) {  // all digits: a token id, however large
        if (ec != std::errc())
          fail_param("logit_bias", "logit_bias: token id {} is out of range", key.substr(0, 40));
        add_bias(out, id, bias, vocab);
      } else {
        add_text_bias(out, key, bias, vocab);
      }
    }
  } else {
    fail_param("logit_bias", "logit_bias must be an object or an array, got {}", v.type_name());
  }
  return out;
}

void read_dry_sequence_breakers(const json& body, SamplerParams& p) {
  const json* v = field(body, "dry_sequence_breakers");
  if (!v) return;
  if (!v->is_array() || v->empty())
    fail_param("dry_sequence_breakers",
               "dry_sequence_breakers must be a non-empty array of strings");
  p.dry_sequence_breakers.clear();
  for (const auto& s : *v) {
    if (!s.is_string())
      fail_param("dry_sequence_breakers",
                 "dry_sequence_breakers must be a non-empty array of strings, found {}",
                 s.type_name());
    p.dry_sequence_breakers.push_back(s.get<std::string>());
  }
}

void read_seed(const json& body, SamplerParams& p) {
  const json* v = field(body, "seed");
  if (!v) return;
  if (v->is_number_unsigned()) {
    const uint64_t s = v->get<uint64_t>();
    p.seed = s == 0xFFFFFFFFull ? std::nullopt : std::optional<uint64_t>(s);
  } else {
    const int64_t s = as_int(*v, "seed");
    if (s < -1) fail_param("seed", "seed must be >= 0, or -1 for a random seed, got {}", s);
    p.seed = s == -1 || s == 0xFFFFFFFFll ? std::nullopt
                                          : std::optional<uint64_t>(static_cast<uint64_t>(s));
  }
}

void read_samplers(const json& body, SamplerParams& p) {
  const json* v = field(body, "samplers");
  if (!v) return;
  if (v->is_string()) {
    p.samplers = parse_sampler_stages(v->get<std::string>(), "samplers");
  } else if (v->is_array()) {
    p.samplers.clear();
    for (const auto& s : *v) {
      if (!s.is_string())
        fail_param("samplers", "samplers: each entry must be a string, got {}", s.type_name());
      auto stage = sampler_stage_from_name(s.get<std::string>());
      if (!stage)
        fail_param("samplers",
                   "samplers: unknown sampler \"{}\" (penalties, dry, top_n_sigma, top_k, typ_p, "
                   "top_p, min_p, xtc, temperature)",
                   s.get<std::string>());
      p.samplers.push_back(*stage);
    }
  } else {
    fail_param("samplers", "samplers must be an array of names or a string, got {}",
               v->type_name());
  }
}

// Logprobs: llama-server's n_probs, else OpenAI's logprobs / top_logprobs.
void read_logprobs(const json& body, SamplerParams& p) {
  int32_t top = -1;
  if (const json* v = field(body, "top_logprobs")) {
    top = as_int32(*v, "top_logprobs");
    if (top < 0 || top > 20)
      fail_param("top_logprobs", "top_logprobs must be between 0 and 20, got {}", top);
  }
  bool openai_logprobs = false;
  int32_t openai_n = 0;
  if (const json* v = field(body, "logprobs")) {
    if (v->is_boolean()) {
      openai_logprobs = v->get<bool>();
      openai_n = openai_logprobs ? std::max(top, 1) : 0;
    } else {
      openai_n = as_int32(*v, "logprobs");
      if (openai_n < 0)
        fail_param("logprobs", "logprobs must be true, false or a count >= 0, got {}", openai_n);
      openai_logprobs = true;
    }
  }
  if (top >= 0 && !openai_logprobs && !field(body, "n_probs"))
    fail_param("top_logprobs", "top_logprobs needs logprobs: true");
  if (const json* v = field(body, "n_probs")) {
    p.n_probs = as_int32(*v, "n_probs");
  } else if (field(body, "logprobs")) {
    p.n_probs = openai_n;
  }
}

}  // namespace

SamplerParams sampler_params_from_json(const json& body, const VocabAccess& vocab,
                                       const SamplerParams& defaults) {
  if (!body.is_object())
    fail_param("body", "the request body must be a JSON object, got {}", body.type_name());
  SamplerParams p = defaults;
  read_float(body, "temperature", p.temperature);
  read_float(body, "dynatemp_range", p.dynatemp_range);
  read_float(body, "dynatemp_exponent", p.dynatemp_exponent);
  read_int(body, "top_k", p.top_k);
  read_float(body, "top_p", p.top_p);
  read_float(body, "min_p", p.min_p);
  read_float(body, "typical_p", p.typical_p);
  read_float(body, "top_n_sigma", p.top_n_sigma);
  read_float(body, "xtc_probability", p.xtc_probability);
  read_float(body, "xtc_threshold", p.xtc_threshold);
  read_int(body, "repeat_last_n", p.repeat_last_n);
  read_float(body, "repeat_penalty", p.repeat_penalty);
  read_float(body, "presence_penalty", p.presence_penalty);
  read_float(body, "frequency_penalty", p.frequency_penalty);
  read_float(body, "dry_multiplier", p.dry_multiplier);
  read_float(body, "dry_base", p.dry_base);
  if (std::isfinite(p.dry_base)) p.dry_base = effective_dry_base(p);
  read_int(body, "dry_allowed_length", p.dry_allowed_length);
  read_int(body, "dry_penalty_last_n", p.dry_penalty_last_n);
  read_dry_sequence_breakers(body, p);
  read_int(body, "mirostat", p.mirostat);
  read_float(body, "mirostat_tau", p.mirostat_tau);
  read_float(body, "mirostat_eta", p.mirostat_eta);
  read_seed(body, p);
  read_int(body, "min_keep", p.min_keep);
  read_samplers(body, p);
  if (const json* v = field(body, "logit_bias")) p.logit_bias = read_logit_bias(*v, vocab);
  read_logprobs(body, p);
  validate(p);
  return p;
}

}  // namespace hearth
