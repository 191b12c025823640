// Request JSON to SamplerParams: llama-server names, OpenAI names, both logit_bias forms, and
// errors that name the parameter.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "server/sampler_params_json.h"
#include "util/error.h"

namespace hearth {
namespace {

using nlohmann::json;

VocabAccess vocab() {
  VocabAccess v;
  v.n_vocab = 1000;
  // "hello" → 5 6, anything else → its length
  v.tokenize = [](std::string_view s) {
    if (s == "hello") return std::vector<int32_t>{5, 6};
    return std::vector<int32_t>{static_cast<int32_t>(s.size())};
  };
  return v;
}

SamplerParams parse(const std::string& text) {
  return sampler_params_from_json(json::parse(text), vocab());
}

void expect_error(const std::string& text, const std::string& name) {
  try {
    parse(text);
    ADD_FAILURE() << text << ": no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
  }
}

TEST(ParamsJson, DefaultsAreLlamaServers) {
  const SamplerParams p = parse("{}");
  EXPECT_FLOAT_EQ(p.temperature, 0.8f);
  EXPECT_EQ(p.top_k, 40);
  EXPECT_FLOAT_EQ(p.top_p, 0.95f);
  EXPECT_FLOAT_EQ(p.min_p, 0.05f);
  EXPECT_EQ(p.repeat_last_n, 64);
  EXPECT_FLOAT_EQ(p.dry_base, 1.75f);
  EXPECT_EQ(p.dry_penalty_last_n, -1);
  EXPECT_EQ(p.dry_sequence_breakers.size(), 4u);
  EXPECT_FALSE(p.seed.has_value());
  EXPECT_EQ(p.samplers, default_sampler_stages());
}

TEST(ParamsJson, ReadsEveryLlamaServerName) {
  const SamplerParams p = parse(R"({
    "temperature": 0.5, "dynatemp_range": 0.2, "dynatemp_exponent": 1.5, "top_k": 7,
    "top_p": 0.8, "min_p": 0.1, "typical_p": 0.9, "top_n_sigma": 1.5, "xtc_probability": 0.3,
    "xtc_threshold": 0.2, "repeat_last_n": 32, "repeat_penalty": 1.2, "presence_penalty": 0.3,
    "frequency_penalty": 0.4, "dry_multiplier": 0.8, "dry_base": 2.0, "dry_allowed_length": 3,
    "dry_penalty_last_n": 128, "dry_sequence_breakers": ["\n", "###"], "mirostat": 2,
    "mirostat_tau": 4.0, "mirostat_eta": 0.2, "seed": 1234, "min_keep": 2, "n_probs": 3,
    "samplers": ["top_k", "temperature"], "unknown_key": {"x": 1}, "stream": true})");
  EXPECT_FLOAT_EQ(p.temperature, 0.5f);
  EXPECT_FLOAT_EQ(p.dynatemp_range, 0.2f);
  EXPECT_FLOAT_EQ(p.dynatemp_exponent, 1.5f);
  EXPECT_EQ(p.top_k, 7);
  EXPECT_FLOAT_EQ(p.top_p, 0.8f);
  EXPECT_FLOAT_EQ(p.min_p, 0.1f);
  EXPECT_FLOAT_EQ(p.typical_p, 0.9f);
  EXPECT_FLOAT_EQ(p.top_n_sigma, 1.5f);
  EXPECT_FLOAT_EQ(p.xtc_probability, 0.3f);
  EXPECT_FLOAT_EQ(p.xtc_threshold, 0.2f);
  EXPECT_EQ(p.repeat_last_n, 32);
  EXPECT_FLOAT_EQ(p.repeat_penalty, 1.2f);
  EXPECT_FLOAT_EQ(p.presence_penalty, 0.3f);
  EXPECT_FLOAT_EQ(p.frequency_penalty, 0.4f);
  EXPECT_FLOAT_EQ(p.dry_multiplier, 0.8f);
  EXPECT_FLOAT_EQ(p.dry_base, 2.0f);
  EXPECT_EQ(p.dry_allowed_length, 3);
  EXPECT_EQ(p.dry_penalty_last_n, 128);
  EXPECT_EQ(p.dry_sequence_breakers, (std::vector<std::string>{"\n", "###"}));
  EXPECT_EQ(p.mirostat, 2);
  EXPECT_FLOAT_EQ(p.mirostat_tau, 4.0f);
  EXPECT_FLOAT_EQ(p.mirostat_eta, 0.2f);
  EXPECT_EQ(p.seed, 1234u);
  EXPECT_EQ(p.min_keep, 2);
  EXPECT_EQ(p.n_probs, 3);
  EXPECT_EQ(p.samplers, (std::vector<SamplerStage>{SamplerStage::TopK, SamplerStage::Temperature}));
}

TEST(ParamsJson, NullMeansDefaultAndIntegralFloatsAreIntegers) {
  const SamplerParams p = parse(R"({"temperature": null, "top_k": 40.0, "seed": -1})");
  EXPECT_FLOAT_EQ(p.temperature, 0.8f);
  EXPECT_EQ(p.top_k, 40);
  EXPECT_FALSE(p.seed.has_value());
  EXPECT_FALSE(parse(R"({"seed": 4294967295})").seed.has_value());  // LLAMA_DEFAULT_SEED
}

TEST(ParamsJson, ClampsDryBaseLikeLlamaServer) {
  EXPECT_FLOAT_EQ(parse(R"({"dry_base": 0.5})").dry_base, 1.75f);
}

TEST(ParamsJson, SamplersAsString) {
  EXPECT_EQ(parse(R"({"samplers": "kt"})").samplers,
            (std::vector<SamplerStage>{SamplerStage::TopK, SamplerStage::Temperature}));
  EXPECT_EQ(parse(R"({"samplers": "min_p;temp"})").samplers,
            (std::vector<SamplerStage>{SamplerStage::MinP, SamplerStage::Temperature}));
}

TEST(ParamsJson, OpenAiLogprobs) {
  EXPECT_EQ(parse(R"({"logprobs": true})").n_probs, 1);
  EXPECT_EQ(parse(R"({"logprobs": true, "top_logprobs": 0})").n_probs, 1);
  EXPECT_EQ(parse(R"({"logprobs": true, "top_logprobs": 7})").n_probs, 7);
  EXPECT_EQ(parse(R"({"logprobs": false})").n_probs, 0);
  EXPECT_EQ(parse(R"({"logprobs": 3})").n_probs, 3);  // legacy completions
  EXPECT_EQ(parse(R"({"logprobs": true, "n_probs": 4})").n_probs, 4);
  expect_error(R"({"top_logprobs": 3})", "top_logprobs");
  expect_error(R"({"logprobs": true, "top_logprobs": 21})", "top_logprobs");
  expect_error(R"({"logprobs": "yes"})", "logprobs");
}

TEST(ParamsJson, LogitBiasArrayForm) {
  const auto p = parse(R"({"logit_bias": [[15, 1.5], ["hello", -2], [7, false]]})");
  ASSERT_EQ(p.logit_bias.size(), 4u);
  EXPECT_EQ(p.logit_bias[0].token, 15);
  EXPECT_FLOAT_EQ(p.logit_bias[0].bias, 1.5f);
  EXPECT_EQ(p.logit_bias[1].token, 5);
  EXPECT_EQ(p.logit_bias[2].token, 6);
  EXPECT_FLOAT_EQ(p.logit_bias[2].bias, -2.0f);
  EXPECT_EQ(p.logit_bias[3].token, 7);
  EXPECT_EQ(p.logit_bias[3].bias, -INFINITY);
}

TEST(ParamsJson, LogitBiasObjectForm) {
  const auto p = parse(R"({"logit_bias": {"15": -100, "hello": 3, "99": false}})");
  ASSERT_EQ(p.logit_bias.size(), 4u);
  std::map<int32_t, float> m;
  for (const auto& b : p.logit_bias) m[b.token] = b.bias;
  EXPECT_FLOAT_EQ(m[15], -100.0f);
  EXPECT_FLOAT_EQ(m[5], 3.0f);
  EXPECT_FLOAT_EQ(m[6], 3.0f);
  EXPECT_EQ(m[99], -INFINITY);
}

TEST(ParamsJson, ErrorsNameTheParameter) {
  expect_error(R"({"top_k": "forty"})", "top_k");
  expect_error(R"({"top_k": 4.5})", "top_k");
  expect_error(R"({"temperature": "hot"})", "temperature");
  expect_error(R"({"top_p": 1.5})", "top_p");
  expect_error(R"({"min_p": -1})", "min_p");
  expect_error(R"({"mirostat": 5})", "mirostat");
  expect_error(R"({"repeat_last_n": -5})", "repeat_last_n");
  expect_error(R"({"seed": -7})", "seed");
  expect_error(R"({"seed": "abc"})", "seed");
  expect_error(R"({"samplers": ["top_k", "warp"]})", "samplers");
  expect_error(R"({"samplers": 3})", "samplers");
  expect_error(R"({"dry_sequence_breakers": []})", "dry_sequence_breakers");
  expect_error(R"({"dry_sequence_breakers": [1]})", "dry_sequence_breakers");
  expect_error(R"({"logit_bias": [[1]]})", "logit_bias");
  expect_error(R"({"logit_bias": [[1, true]]})", "logit_bias");
  expect_error(R"({"logit_bias": [[1000, 1]]})", "logit_bias");
  expect_error(R"({"logit_bias": {"-3": 1}})", "logit_bias");
  expect_error(R"({"logit_bias": 5})", "logit_bias");
  expect_error(R"({"n_probs": -2})", "n_probs");
  expect_error(R"({"min_keep": 1e12})", "min_keep");
  EXPECT_THROW(sampler_params_from_json(json::array(), vocab()), Error);
}

TEST(ParamsJson, TextKeysNeedATokenizer) {
  VocabAccess none;
  none.n_vocab = 100;
  EXPECT_THROW(sampler_params_from_json(json::parse(R"({"logit_bias": {"hi": 1}})"), none), Error);
  EXPECT_NO_THROW(sampler_params_from_json(json::parse(R"({"logit_bias": {"12": 1}})"), none));
}

}  // namespace
}  // namespace hearth
