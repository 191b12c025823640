// The Sampler as the engine uses it: determinism, greedy, logprobs, distributions, Mirostat,
// validation.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "sampling/reference_samplers.h"
#include "sampling/sampler.h"
#include "util/error.h"

namespace hearth {
namespace {

VocabAccess vocab_of(int32_t n) {
  VocabAccess v;
  v.n_vocab = n;
  v.token_piece = [](int32_t t) { return t == 0 ? std::string("\n") : std::string("w"); };
  return v;
}

SamplerParams seeded(uint64_t seed) {
  SamplerParams p;
  p.seed = seed;
  return p;
}

std::vector<int32_t> generate(Sampler& s, int n, uint32_t logit_seed) {
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) {
    const auto l = test::random_logits(static_cast<size_t>(s.n_vocab()), logit_seed + i, 2.0f);
    const int32_t t = s.sample(l).token;
    s.accept(t);
    out.push_back(t);
  }
  return out;
}

TEST(Sampler, SameSeedSameTokens) {
  SamplerParams p = seeded(42);
  p.repeat_penalty = 1.1f;
  p.xtc_probability = 0.5f;
  p.dry_multiplier = 0.5f;
  Sampler a(p, vocab_of(500)), b(p, vocab_of(500));
  EXPECT_EQ(generate(a, 200, 1), generate(b, 200, 1));
  Sampler c(seeded(43), vocab_of(500)), d(seeded(42), vocab_of(500));
  EXPECT_NE(generate(c, 200, 1), generate(d, 200, 1));
}

TEST(Sampler, StreamDoesNotDependOnBatchNeighbours) {
  Sampler alone(seeded(7), vocab_of(300));
  const auto want = generate(alone, 100, 5);
  Sampler a(seeded(7), vocab_of(300)), other(seeded(8), vocab_of(300));
  std::vector<int32_t> got;
  for (int i = 0; i < 100; ++i) {  // interleaved with another sequence
    const auto l = test::random_logits(300, 5 + i, 2.0f);
    const auto noise = test::random_logits(300, 999 + i, 2.0f);
    other.accept(other.sample(noise).token);
    got.push_back(a.sample(l).token);
    a.accept(got.back());
  }
  EXPECT_EQ(got, want);
}

TEST(Sampler, UnsetSeedIsDrawnAndReported) {
  SamplerParams p;  // seed unset
  Sampler a(p, vocab_of(10));
  SamplerParams q = seeded(a.seed());
  Sampler b(q, vocab_of(10));
  EXPECT_EQ(generate(a, 50, 3), generate(b, 50, 3));
}

TEST(Sampler, GreedyPicksTheBestAfterPenalties) {
  SamplerParams p = seeded(1);
  p.temperature = 0.0f;
  std::vector<float> l = {1.0f, 5.0f, 4.5f, 0.0f};
  Sampler s(p, vocab_of(4));
  EXPECT_EQ(s.sample(l).token, 1);
  p.repeat_penalty = 2.0f;  // 5 / 2 < 4.5
  Sampler pen(p, vocab_of(4));
  pen.set_history(std::vector<int32_t>{1});
  EXPECT_EQ(pen.sample(l).token, 2);
  p.logit_bias = {{3, 10.0f}};
  Sampler biased(p, vocab_of(4));
  EXPECT_EQ(biased.sample(l).token, 3);
}

TEST(Sampler, DefaultChainStaysInTheTopK) {
  const int32_t V = 151936;
  Sampler s(seeded(3), vocab_of(V));
  const auto l = test::random_logits(V, 11, 3.0f);
  auto ranked = test::sorted_copy(test::all_tokens(l));
  std::map<int32_t, int> rank;
  for (int i = 0; i < 40; ++i) rank[ranked[static_cast<size_t>(i)].token] = i;
  for (int i = 0; i < 200; ++i) EXPECT_TRUE(rank.count(s.sample(l).token));
}

TEST(Sampler, DrawsFollowTheTemperedSoftmax) {
  SamplerParams p = seeded(2024);
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.temperature = 0.7f;
  const std::vector<float> l = {0.0f, 0.5f, 1.0f, -1.0f, 0.2f};
  Sampler s(p, vocab_of(5));
  std::vector<int> counts(5);
  const int n = 40000;
  for (int i = 0; i < n; ++i) ++counts[static_cast<size_t>(s.sample(l).token)];
  double z = 0;
  for (float x : l) z += std::exp(x / 0.7);
  for (size_t i = 0; i < l.size(); ++i) {
    const double want = std::exp(l[i] / 0.7) / z;
    const double sd = std::sqrt(want * (1 - want) / n);
    EXPECT_NEAR(static_cast<double>(counts[i]) / n, want, 5 * sd) << "token " << i;
  }
}

TEST(Sampler, LogprobsAreLogSoftmaxOfRawLogits) {
  SamplerParams p = seeded(5);
  p.n_probs = 5;
  p.temperature = 0.0f;
  p.logit_bias = {{0, 100.0f}};  // the sampler picks token 0; logprobs ignore the bias
  const auto l = test::random_logits(1000, 21);
  Sampler s(p, vocab_of(1000));
  const SampleResult r = s.sample(l);
  EXPECT_EQ(r.token, 0);
  double m = -INFINITY;
  for (float x : l) m = std::max(m, static_cast<double>(x));
  double z = 0;
  for (float x : l) z += std::exp(x - m);
  const double lse = m + std::log(z);
  EXPECT_NEAR(r.logprob, l[0] - lse, 1e-4);
  const auto ranked = test::sorted_copy(test::all_tokens(l));
  ASSERT_EQ(r.top_logprobs.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(r.top_logprobs[i].token, ranked[i].token);
    EXPECT_NEAR(r.top_logprobs[i].logprob, ranked[i].logit - lse, 1e-4);
  }
  Sampler quiet(seeded(5), vocab_of(1000));  // n_probs 0: nothing reported
  EXPECT_TRUE(quiet.sample(l).top_logprobs.empty());
}

TEST(Sampler, LogprobsWithMinusInfinity) {
  SamplerParams p = seeded(5);
  p.n_probs = 3;
  const std::vector<float> l = {-INFINITY, 0.0f, -INFINITY};
  Sampler s(p, vocab_of(3));
  const auto r = s.sample(l);
  EXPECT_EQ(r.token, 1);
  EXPECT_FLOAT_EQ(r.logprob, 0.0f);
  ASSERT_EQ(r.top_logprobs.size(), 3u);
  EXPECT_EQ(r.top_logprobs[1].logprob, -INFINITY);
}

TEST(Sampler, MirostatAdaptsMu) {
  for (int32_t version : {1, 2}) {
    SamplerParams p = seeded(9);
    p.mirostat = version;
    p.mirostat_tau = 3.0f;
    Sampler s(p, vocab_of(2000));
    const auto tokens = generate(s, 300, 40);
    for (int32_t t : tokens) {
      EXPECT_GE(t, 0);
      EXPECT_LT(t, 2000);
    }
    // Flat logits are far more surprising than tau: Mirostat keeps few tokens, so the draws
    // concentrate on the best ones compared with plain sampling.
    std::map<int32_t, int> distinct;
    for (int32_t t : tokens) ++distinct[t];
    EXPECT_LT(distinct.size(), 300u) << "version " << version;
  }
}

TEST(Sampler, HistoryRollbackRestoresPenalties) {
  SamplerParams p = seeded(1);
  p.temperature = 0.0f;
  p.repeat_penalty = 3.0f;
  const std::vector<float> l = {1.0f, 2.0f, 1.5f};
  Sampler s(p, vocab_of(3));
  s.set_history(std::vector<int32_t>{0, 1});
  EXPECT_EQ(s.sample(l).token, 2);         // 1 is penalised to 0.67
  s.set_history(std::vector<int32_t>{0});  // rolled back: 1 is free again
  EXPECT_EQ(s.sample(l).token, 1);
  s.set_history(std::vector<int32_t>{2, 1});  // diverged
  EXPECT_EQ(s.sample(l).token, 0);
}

TEST(Sampler, RejectsBadInput) {
  Sampler s(seeded(1), vocab_of(10));
  std::vector<float> wrong(11);
  EXPECT_THROW(s.sample(wrong), Error);
  EXPECT_THROW(s.accept(10), Error);
  EXPECT_THROW(s.accept(-1), Error);
  SamplerParams p;
  p.logit_bias = {{10, 1.0f}};
  try {
    Sampler bad(p, vocab_of(10));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("logit_bias"), std::string::npos) << e.what();
  }
}

TEST(Validate, NamesTheParameter) {
  auto expect_error = [](SamplerParams p, const std::string& name) {
    try {
      validate(p);
      ADD_FAILURE() << name << ": no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  };
  SamplerParams p;
  EXPECT_NO_THROW(validate(p));
  p.top_p = 1.5f;
  expect_error(p, "top_p");
  p = {};
  p.temperature = NAN;
  expect_error(p, "temperature");
  p = {};
  p.min_p = -0.1f;
  expect_error(p, "min_p");
  p = {};
  p.mirostat = 3;
  expect_error(p, "mirostat");
  p = {};
  p.repeat_last_n = -2;
  expect_error(p, "repeat_last_n");
  p = {};
  p.repeat_penalty = 0.0f;
  expect_error(p, "repeat_penalty");
  p = {};
  p.n_probs = -1;
  expect_error(p, "n_probs");
  p = {};
  p.xtc_threshold = 2.0f;
  expect_error(p, "xtc_threshold");
  p = {};
  p.dry_sequence_breakers = {""};
  expect_error(p, "dry_sequence_breakers");
}

TEST(SamplerStages, NamesAliasesAndLetters) {
  EXPECT_EQ(parse_sampler_stages("top_k;temperature", "samplers"),
            (std::vector<SamplerStage>{SamplerStage::TopK, SamplerStage::Temperature}));
  EXPECT_EQ(parse_sampler_stages("nucleus;typical;temp", "samplers"),
            (std::vector<SamplerStage>{SamplerStage::TopP, SamplerStage::TypicalP,
                                       SamplerStage::Temperature}));
  EXPECT_EQ(parse_sampler_stages("edskypmxt", "samplers"), default_sampler_stages());
  EXPECT_EQ(parse_sampler_stages("dry", "samplers"),
            (std::vector<SamplerStage>{SamplerStage::Dry}));
  EXPECT_THROW(parse_sampler_stages("top_k;bogus", "samplers"), Error);
  EXPECT_THROW(parse_sampler_stages("kq", "samplers"), Error);
  for (SamplerStage s : default_sampler_stages())
    EXPECT_EQ(sampler_stage_from_name(sampler_stage_name(s)), s);
}

}  // namespace
}  // namespace hearth
