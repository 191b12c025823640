// `hearth run`'s sampling flags (llama-cli names) into SamplerParams.
#include <gtest/gtest.h>

#include <cmath>

#include "cli/sampler_options.h"

namespace hearth {
namespace {

SamplerParams parse(std::vector<std::string> args) {
  SamplerParams p;
  CLI::App app;
  cli::add_sampler_options(&app, p);
  args.insert(args.begin(), "hearth");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  app.parse(static_cast<int>(argv.size()), argv.data());
  return p;
}

TEST(SamplerOptions, LlamaCliFlags) {
  const SamplerParams p = parse({"--temp",
                                 "0.3",
                                 "--top-k",
                                 "5",
                                 "--top-p",
                                 "0.5",
                                 "--min-p",
                                 "0.2",
                                 "--typical",
                                 "0.7",
                                 "--top-nsigma",
                                 "2",
                                 "--xtc-probability",
                                 "0.4",
                                 "--xtc-threshold",
                                 "0.15",
                                 "--repeat-last-n",
                                 "16",
                                 "--repeat-penalty",
                                 "1.2",
                                 "--presence-penalty",
                                 "0.1",
                                 "--frequency-penalty",
                                 "0.2",
                                 "--dry-multiplier",
                                 "0.8",
                                 "--dry-base",
                                 "2",
                                 "--dry-allowed-length",
                                 "3",
                                 "--dry-penalty-last-n",
                                 "256",
                                 "--dry-sequence-breaker",
                                 "#",
                                 "--dry-sequence-breaker",
                                 "@",
                                 "--mirostat",
                                 "2",
                                 "--mirostat-lr",
                                 "0.3",
                                 "--mirostat-ent",
                                 "4",
                                 "--logit-bias",
                                 "15043+1",
                                 "--logit-bias",
                                 "7-inf",
                                 "--seed",
                                 "99",
                                 "--min-keep",
                                 "2",
                                 "--n-probs",
                                 "4",
                                 "--samplers",
                                 "top_k;temperature",
                                 "--dynatemp-range",
                                 "0.5",
                                 "--dynatemp-exp",
                                 "2"});
  EXPECT_FLOAT_EQ(p.temperature, 0.3f);
  EXPECT_EQ(p.top_k, 5);
  EXPECT_FLOAT_EQ(p.top_p, 0.5f);
  EXPECT_FLOAT_EQ(p.min_p, 0.2f);
  EXPECT_FLOAT_EQ(p.typical_p, 0.7f);
  EXPECT_FLOAT_EQ(p.top_n_sigma, 2.0f);
  EXPECT_FLOAT_EQ(p.xtc_probability, 0.4f);
  EXPECT_FLOAT_EQ(p.xtc_threshold, 0.15f);
  EXPECT_EQ(p.repeat_last_n, 16);
  EXPECT_FLOAT_EQ(p.repeat_penalty, 1.2f);
  EXPECT_FLOAT_EQ(p.presence_penalty, 0.1f);
  EXPECT_FLOAT_EQ(p.frequency_penalty, 0.2f);
  EXPECT_FLOAT_EQ(p.dry_multiplier, 0.8f);
  EXPECT_FLOAT_EQ(p.dry_base, 2.0f);
  EXPECT_EQ(p.dry_allowed_length, 3);
  EXPECT_EQ(p.dry_penalty_last_n, 256);
  EXPECT_EQ(p.dry_sequence_breakers, (std::vector<std::string>{"#", "@"}));
  EXPECT_EQ(p.mirostat, 2);
  EXPECT_FLOAT_EQ(p.mirostat_eta, 0.3f);
  EXPECT_FLOAT_EQ(p.mirostat_tau, 4.0f);
  ASSERT_EQ(p.logit_bias.size(), 2u);
  EXPECT_EQ(p.logit_bias[0].token, 15043);
  EXPECT_FLOAT_EQ(p.logit_bias[0].bias, 1.0f);
  EXPECT_EQ(p.logit_bias[1].token, 7);
  EXPECT_EQ(p.logit_bias[1].bias, -INFINITY);
  EXPECT_EQ(p.seed, 99u);
  EXPECT_EQ(p.min_keep, 2);
  EXPECT_EQ(p.n_probs, 4);
  EXPECT_EQ(p.samplers, (std::vector<SamplerStage>{SamplerStage::TopK, SamplerStage::Temperature}));
  EXPECT_FLOAT_EQ(p.dynatemp_range, 0.5f);
  EXPECT_FLOAT_EQ(p.dynatemp_exponent, 2.0f);
  EXPECT_NO_THROW(validate(p));
}

TEST(SamplerOptions, DefaultsUntouchedAndSpecialValues) {
  const SamplerParams d = parse({});
  EXPECT_FLOAT_EQ(d.temperature, 0.8f);
  EXPECT_EQ(d.top_k, 40);
  EXPECT_EQ(d.dry_sequence_breakers.size(), 4u);
  EXPECT_FALSE(d.seed.has_value());
  EXPECT_FALSE(parse({"--seed", "-1"}).seed.has_value());
  EXPECT_TRUE(parse({"--dry-sequence-breaker", "none"}).dry_sequence_breakers.empty());
  EXPECT_EQ(parse({"--samplers", "kmt"}).samplers.size(), 3u);
}

TEST(SamplerOptions, MalformedValuesFailNamingTheFlag) {
  for (const auto& args : std::vector<std::vector<std::string>>{{"--logit-bias", "15043"},
                                                                {"--logit-bias", "x+1"},
                                                                {"--logit-bias", "5+abc"},
                                                                {"--samplers", "top_k;warp"},
                                                                {"--seed", "-5"},
                                                                {"--top-k", "many"}}) {
    try {
      parse(args);
      ADD_FAILURE() << args[0] << " " << args[1] << ": no error";
    } catch (const CLI::ParseError& e) {
      EXPECT_NE(std::string(e.what()).find(args[0].substr(2)), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace hearth
