// Each stage against its plain reference on fixed logits, dense and already-truncated input,
// and the edge cases: all-equal logits, -infinity, NaN, tiny vocabularies, min_keep.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "sampling/reference_samplers.h"
#include "sampling/stages.h"

namespace hearth {
namespace {

using test::Cands;

// The stage's kept set, by token.
Cands kept(Candidates& c) {
  if (c.dense())
    return test::by_token(
        test::all_tokens(std::vector<float>(c.dense_logits().begin(), c.dense_logits().end())));
  return test::by_token(c.items());
}

void expect_same(const Cands& got, const Cands& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].token, want[i].token) << what << " at " << i;
    EXPECT_EQ(got[i].logit, want[i].logit) << what << " at " << i;
  }
}

using Stage = std::function<void(Candidates&)>;
using Ref = std::function<Cands(Cands)>;

// Runs `stage` on a dense view of `logits`, and on a sparse list (the 300 best, shuffled into
// token order), against `ref` on the same input.
void check_stage(const std::vector<float>& logits, const Stage& stage, const Ref& ref,
                 const std::string& what) {
  Candidates c;
  c.reset(logits);
  stage(c);
  expect_same(kept(c), test::by_token(ref(test::all_tokens(logits))), what + " (dense)");

  if (logits.size() > 300) {
    Candidates s;
    s.reset(logits);
    apply_top_k(s, 300, 0);
    auto subset = test::by_token(s.items());
    s.items() = subset;  // token order, not sorted
    s.set_sorted(false);
    stage(s);
    expect_same(kept(s), test::by_token(ref(subset)), what + " (sparse)");
  }
}

std::vector<std::vector<float>> logit_sets() {
  std::vector<std::vector<float>> sets;
  sets.push_back(test::random_logits(1000, 1));
  sets.push_back(test::random_logits(5000, 2, 1.0f));   // flat
  sets.push_back(test::random_logits(2000, 3, 12.0f));  // peaked
  sets.push_back(std::vector<float>(500, 0.25f));       // all equal
  auto with_inf = test::random_logits(800, 4);
  for (size_t i = 0; i < with_inf.size(); i += 3) with_inf[i] = -INFINITY;
  sets.push_back(with_inf);
  sets.push_back({1.0f});                   // one token
  sets.push_back({0.5f, 0.5f});             // two equal
  sets.push_back({3.0f, -INFINITY, 1.0f});  // tiny with -inf
  sets.push_back({-INFINITY, -INFINITY, -INFINITY});
  return sets;
}

TEST(Stages, TopKMatchesReference) {
  for (const auto& l : logit_sets())
    for (int k : {-1, 0, 1, 2, 40, 299, 5000})
      for (size_t mk : {0, 1, 3, 50}) {
        check_stage(
            l, [&](Candidates& c) { apply_top_k(c, k, mk); },
            [&](Cands c) { return test::ref_top_k(c, k, mk); },
            "top_k " + std::to_string(k) + " min_keep " + std::to_string(mk));
      }
}

TEST(Stages, TopPMatchesReference) {
  for (const auto& l : logit_sets())
    for (float p : {0.0f, 0.1f, 0.5f, 0.9f, 0.95f, 0.999f, 1.0f})
      for (size_t mk : {0, 5}) {
        check_stage(
            l, [&](Candidates& c) { apply_top_p(c, p, mk); },
            [&](Cands c) { return test::ref_top_p(c, p, mk); }, "top_p " + std::to_string(p));
      }
}

TEST(Stages, MinPMatchesReference) {
  for (const auto& l : logit_sets())
    for (float p : {0.0f, 0.01f, 0.05f, 0.3f, 1.0f})
      for (size_t mk : {0, 1, 20}) {
        check_stage(
            l, [&](Candidates& c) { apply_min_p(c, p, mk); },
            [&](Cands c) { return test::ref_min_p(c, p, mk); }, "min_p " + std::to_string(p));
      }
}

TEST(Stages, TypicalMatchesReference) {
  for (const auto& l : logit_sets())
    for (float p : {0.0f, 0.2f, 0.5f, 0.9f, 1.0f})
      for (size_t mk : {0, 7}) {
        check_stage(
            l, [&](Candidates& c) { apply_typical(c, p, mk); },
            [&](Cands c) { return test::ref_typical(c, p, mk); }, "typical " + std::to_string(p));
      }
}

TEST(Stages, TopNSigmaMatchesReference) {
  for (const auto& l : logit_sets())
    for (float n : {-1.0f, 0.0f, 0.5f, 1.0f, 3.0f})
      for (size_t mk : {0, 30}) {
        check_stage(
            l, [&](Candidates& c) { apply_top_n_sigma(c, n, mk); },
            [&](Cands c) { return test::ref_top_n_sigma(c, n, mk); },
            "top_n_sigma " + std::to_string(n));
      }
}

TEST(Stages, XtcWhenFiredMatchesReference) {
  // probability 1: the chance always fires
  for (const auto& l : logit_sets())
    for (float thr : {0.0f, 0.05f, 0.1f, 0.3f})
      for (size_t mk : {0, 2}) {
        SamplerRng rng(7);
        check_stage(
            l, [&](Candidates& c) { apply_xtc(c, 1.0f, thr, mk, rng); },
            [&](Cands c) {
              if (c.size() < 2) return c;
              return test::ref_xtc_fired(c, thr, mk);
            },
            "xtc " + std::to_string(thr));
      }
}

TEST(Stages, XtcRemovesTopChoicesButTheWeakest) {
  std::vector<float> l = {5.0f, 4.9f, 4.8f, 0.0f, -1.0f};  // three tokens above 0.1
  SamplerRng rng(1);
  Candidates c;
  c.reset(l);
  apply_xtc(c, 1.0f, 0.1f, 0, rng);
  auto k = kept(c);
  ASSERT_EQ(k.size(), 3u);
  EXPECT_EQ(k[0].token, 2);
  EXPECT_EQ(k[1].token, 3);
  EXPECT_EQ(k[2].token, 4);
  // threshold above 0.5 disables it
  c.reset(l);
  apply_xtc(c, 1.0f, 0.6f, 0, rng);
  EXPECT_EQ(c.size(), 5u);
  // probability 0 never fires
  c.reset(l);
  apply_xtc(c, 0.0f, 0.1f, 0, rng);
  EXPECT_EQ(c.size(), 5u);
}

TEST(Stages, TemperatureScalesLogits) {
  std::vector<float> l = {2.0f, 1.0f, -3.0f};
  Candidates c;
  c.reset(l);
  apply_temperature(c, 0.5f, 0.0f, 1.0f);
  auto k = kept(c);
  ASSERT_EQ(k.size(), 3u);
  EXPECT_EQ(k[0].logit, 4.0f);
  EXPECT_EQ(k[1].logit, 2.0f);
  EXPECT_EQ(k[2].logit, -6.0f);
  c.reset(l);
  apply_temperature(c, 0.0f, 0.0f, 1.0f);  // t <= 0 keeps the best only
  k = kept(c);
  ASSERT_EQ(k.size(), 1u);
  EXPECT_EQ(k[0].token, 0);
}

TEST(Stages, DynamicTemperatureFollowsEntropy) {
  // Uniform logits have maximal entropy: the temperature is t + range.
  std::vector<float> flat(8, 1.0f);
  Candidates c;
  c.reset(flat);
  apply_temperature(c, 1.0f, 0.5f, 1.0f);
  for (const auto& x : c.items()) EXPECT_FLOAT_EQ(x.logit, 1.0f / 1.5f);
  // A near-certain distribution has ~0 entropy: the temperature is ~max(0, t - range).
  std::vector<float> peaked = {40.0f, 0.0f, 0.0f, 0.0f};
  c.reset(peaked);
  apply_temperature(c, 1.0f, 0.5f, 1.0f);
  EXPECT_NEAR(c.items()[0].logit, 40.0f / 0.5f, 0.01f);
}

TEST(Stages, PickBestPrefersLowestIdOnTies) {
  std::vector<float> l = {1.0f, 3.0f, NAN, 3.0f};
  Candidates c;
  c.reset(l);
  EXPECT_EQ(pick_best(c), 1);
  std::vector<float> all_nan = {NAN, NAN};
  c.reset(all_nan);
  EXPECT_EQ(pick_best(c), 0);
}

TEST(Stages, DrawFollowsTheSoftmax) {
  std::vector<float> l = {0.0f, 1.0f, 2.0f, -INFINITY};
  Candidates c;
  c.reset(l);
  const auto p = test::ref_probs(test::all_tokens(l));
  // u at the CDF edges: each token owns [cdf_i, cdf_i+1)
  double cdf = 0;
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(c.items()[draw_index(c, cdf + 1e-9)].token, static_cast<int32_t>(i));
    cdf += p[i];
    EXPECT_EQ(c.items()[draw_index(c, cdf - 1e-9)].token, static_cast<int32_t>(i));
  }
  EXPECT_EQ(c.items()[draw_index(c, 0.999999999)].token, 2);  // never the -inf token
}

TEST(Stages, AllMinusInfinityDrawsUniformly) {
  std::vector<float> l(4, -INFINITY);
  Candidates c;
  c.reset(l);
  EXPECT_EQ(c.items()[draw_index(c, 0.0)].token, 0);
  EXPECT_EQ(c.items()[draw_index(c, 0.6)].token, 2);
  EXPECT_EQ(c.items()[draw_index(c, 0.99)].token, 3);
}

}  // namespace
}  // namespace hearth
