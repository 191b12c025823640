// The prefix cache on the architectures with new layer kinds, end to end through the engine:
// the golden cache-reuse scenarios (../shared/golden/synthetic-arch, "Cache-reuse goldens") give
// the cold greedy ids and, on the hybrids (recurrent state), resume from state snapshots — a
// 20-token shared prefix prefills at most 25 of 41 tokens and the next request sharing it only
// 21, a repeat only its last token, a continuation only its new tokens. Cache on and off give
// identical ids and logits over a multi-turn replay, also when a tiny pool preempts.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "common/shared_data.h"
#include "engine/engine.h"
#include "engine/replay_util.h"
#include "model/forward.h"
#include "model/golden_util.h"

namespace hearth {
namespace {

using namespace test;

struct Loaded {
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tok;
};

class HybridCache : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    HEARTH_SHARED_OR_SKIP(path, "models/synthetic-arch/" + GetParam() + "-F32.gguf");
    HEARTH_SHARED_OR_SKIP(golden, "golden/synthetic-arch/" + GetParam() + "-F32.json");
    m_.model = Model::load(path);
    m_.tok = std::make_unique<Tokenizer>(Tokenizer::from_gguf(m_.model->file()));
    golden_ = test::load_json(golden);
    // The forward pass for this architecture may not be on this branch yet.
    Engine probe(*m_.model, *m_.tok, cache_test_options(*m_.model, 16, false), pool_);
    const Turn t = run(probe, {1, 2, 3}, 1);
    if (t.reason == FinishReason::Error &&
        t.error.find("does not run architecture") != std::string::npos)
      GTEST_SKIP() << t.error;
  }
  const nlohmann::json& scenario(const std::string& name) const {
    for (const auto& s : golden_["cache_reuse"])
      if (s["name"] == name) return s;
    throw std::runtime_error("no cache_reuse scenario " + name);
  }
  bool recurrent() const { return m_.model->hparams().has_recurrent_layers(); }

  Loaded m_;
  nlohmann::json golden_;
  ops::ThreadPool pool_{2};
};

// Each scenario on a fresh engine: request 1, then request 2 must give the cold ids.
TEST_P(HybridCache, GoldenScenariosGiveTheColdIds) {
  if (golden_["cache_reuse"].empty()) GTEST_SKIP() << GetParam() << " has no cache_reuse goldens";
  for (const auto& sc : golden_["cache_reuse"]) {
    const std::string name = sc["name"];
    Engine e(*m_.model, *m_.tok, cache_test_options(*m_.model, 128, true), pool_);
    const auto first = test::ids_of(sc["first_request"]["prompt_ids"]);
    const auto second = test::ids_of(sc["second_request"]["prompt_ids"]);
    const auto want = test::ids_of(sc["generation"]["ids"]);
    const Turn a = run(e, first, static_cast<int>(sc["first_request"]["generated_ids"].size()));
    EXPECT_EQ(a.tokens, test::ids_of(sc["first_request"]["generated_ids"])) << name;
    const Turn b = run(e, second, static_cast<int>(want.size()));
    EXPECT_EQ(b.tokens, want) << name;
    EXPECT_EQ(b.stats.cached_tokens + b.stats.prefilled_tokens, static_cast<int64_t>(second.size()))
        << name;
    std::printf("%s %s: request 2 prefilled %lld of %zu (cached %lld)\n", GetParam().c_str(),
                name.c_str(), static_cast<long long>(b.stats.prefilled_tokens), second.size(),
                static_cast<long long>(b.stats.cached_tokens));
    if (name == "p40_after_p40") {
      EXPECT_EQ(b.stats.prefilled_tokens, 1) << name;
    }
    if (name == "continuation_after_p40") {
      const auto n_new = static_cast<int64_t>(second.size() - first.size() - a.tokens.size());
      EXPECT_LE(b.stats.prefilled_tokens, n_new + 1) << name;
    }
    if (name != "p40_after_p40_prefix20") continue;
    EXPECT_LE(b.stats.prefilled_tokens, 25) << name;
    // A third request sharing the same 20 tokens resumes at the branch point request 2 left.
    std::vector<int32_t> third(second.begin(), second.begin() + 20);
    for (int32_t i = 0; i < 21; ++i) {
      int32_t id = 3 + (i * 37 + 11) % 500;
      while (i == 0 && (id == first[20] || id == second[20])) ++id;
      third.push_back(id);
    }
    const Turn c = run(e, third, 4);
    EXPECT_EQ(c.stats.cached_tokens, 20) << name;
    EXPECT_EQ(c.stats.prefilled_tokens, 21) << name;
    Engine cold(*m_.model, *m_.tok, cache_test_options(*m_.model, 128, false), pool_);
    EXPECT_EQ(c.logit_hashes, run(cold, third, 4).logit_hashes) << name << ": third request";
  }
}

TEST_P(HybridCache, CacheOnEqualsCacheOffAlsoWhenPreempting) {
  const int n_gen = 8;
  const auto convs = interleaved_conversations(3, 3, 5);
  Engine plain(*m_.model, *m_.tok, cache_test_options(*m_.model, 256, false), pool_);
  const auto want = replay(plain, convs, n_gen);
  Engine cached(*m_.model, *m_.tok, cache_test_options(*m_.model, 256, true), pool_);
  const auto got = replay(cached, convs, n_gen);
  expect_same(want, got, "cache");
  const auto [prefilled, prompt] = later_turns_prefilled_of_prompt(got);
  EXPECT_LT(prefilled * 4, prompt);  // later turns reuse their history
  const EngineMetrics m = cached.metrics();
  if (recurrent()) {
    EXPECT_GT(m.cache.snapshot_hits, 0);
    EXPECT_GT(m.cache.snapshots, 0);
  }
  EXPECT_EQ(cached.kv_pool().n_free() + cached.cache_only_blocks(), cached.kv_pool().n_blocks());

  // A pool of 9 blocks (32 tokens each) for three sessions of up to ~170 tokens: preemption,
  // eviction (and with them lost snapshots), recomputation — still exact.
  Engine tight(*m_.model, *m_.tok, cache_test_options(*m_.model, 9, true, 3), pool_);
  const auto squeezed = replay(tight, convs, n_gen);
  expect_same(want, squeezed, "tight");
  EXPECT_GT(tight.metrics().preemptions + tight.metrics().cache.evictions, 0);
}

// The disk tiers: blocks and snapshots evicted from a small pool and snapshot budget come back
// from disk, and a restarted engine over the same directory serves the histories from disk —
// the same ids and logits as computing afresh.
TEST_P(HybridCache, DiskAndRestartHitsAreExact) {
  const int n_gen = 8;
  Engine plain(*m_.model, *m_.tok, cache_test_options(*m_.model, 256, false), pool_);
  const auto convs = interleaved_conversations(3, 3, 9);
  std::vector<std::vector<int32_t>> hist;  // the histories as the replay built them
  const auto want = replay(plain, convs, n_gen, &hist);
  const std::string dir = (std::filesystem::temp_directory_path() /
                           ("hearth-hybrid-disk-" + std::to_string(::getpid()) + GetParam()))
                              .string();
  std::filesystem::remove_all(dir);
  EngineOptions o = cache_test_options(*m_.model, 6, true, 1);
  o.cache_dir = dir;
  o.snapshot_bytes = 3 * StateArena::layout_for(m_.model->hparams()).slot_bytes();
  {
    Engine e(*m_.model, *m_.tok, o, pool_);
    const auto got = replay(e, convs, n_gen);
    expect_same(want, got, "disk");
    EXPECT_GT(e.metrics().cache.disk_hit_tokens, 0);
    if (recurrent()) {
      EXPECT_GT(e.metrics().cache.snapshot_disk_hits, 0);
    }
  }
  o.kv_bytes *= 8;
  {
    Engine restarted(*m_.model, *m_.tok, o, pool_);
    for (size_t s = 0; s < hist.size(); ++s) {
      const Turn a = run(restarted, hist[s], 4);
      const Turn b = run(plain, hist[s], 4);
      EXPECT_EQ(a.logit_hashes, b.logit_hashes) << "restart session " << s;
      EXPECT_GT(a.stats.cached_tokens, 0) << "restart session " << s;
    }
  }
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Models, HybridCache,
                         ::testing::Values("qwen35", "qwen35moe", "lfm2", "gemma3", "qwen3moe"));

}  // namespace
}  // namespace hearth
