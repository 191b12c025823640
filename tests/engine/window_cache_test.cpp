// gemma3's sliding-window layers through the engine with 4-token blocks (window 16: several
// blocks slide out of every window): the golden cache-reuse scenarios give the cold ids with the
// prefilled counts the memory rule predicts (kv/kv_manager.h, "Sliding windows"), a generating
// sequence's window blocks stay bounded, and cache on equals cache off over a multi-turn replay,
// also with a pool so small that sequences are preempted. Also the bytes per token of each pool
// for Gemma-3-1B's shape.
#include <gtest/gtest.h>

#include <map>

#include "common/shared_data.h"
#include "engine/engine.h"
#include "engine/replay_util.h"
#include "kv/kv_manager.h"
#include "model/forward.h"
#include "model/golden_util.h"
#include "tools/synth.h"

namespace hearth {
namespace {

using namespace test;

constexpr int64_t kB = 4;

// A budget of `blocks` blocks over all KV layers, split by the rule between the two pools.
EngineOptions options(const Model& m, int32_t blocks, bool cache, int max_running = 4) {
  EngineOptions o = cache_test_options(m, blocks, cache, max_running);
  o.kv_block_tokens = kB;
  o.step_tokens = 16;
  set_kv_blocks(o, m, blocks);
  return o;
}

class WindowCache : public ::testing::Test {
 protected:
  void SetUp() override {
    HEARTH_SHARED_OR_SKIP(path, "models/synthetic-arch/gemma3-F32.gguf");
    HEARTH_SHARED_OR_SKIP(golden, "golden/synthetic-arch/gemma3-F32.json");
    model_ = Model::load(path);
    tok_ = std::make_unique<Tokenizer>(Tokenizer::from_gguf(model_->file()));
    golden_ = test::load_json(golden);
    ASSERT_EQ(model_->hparams().n_swa, 16);
  }
  std::unique_ptr<Model> model_;
  std::unique_ptr<Tokenizer> tok_;
  nlohmann::json golden_;
  ops::ThreadPool pool_{2};
};

// Prefilled tokens of request 2 by the rule, with chunks of 16 and blocks of 4: a match ending
// at p needs the window blocks of [p - 15, p).
//   p40_after_p200: only BOS in common, and block 0 slid out of p200's windows: 0 cached.
//   p40_after_p40_prefix20: request 1's prompt (41) ran in chunks at 0, 16, 32; the last chunk
//     released blocks 0-3, so its cached prompt tail starts at 16 and the branch at 20 (needing
//     [5, 20)) is cut back to 0.
//   p40_after_p40: the repeat resumes at 40 (window [25, 40) in the prompt's tail): 1 token.
//   continuation_after_p40: the reply's tail covers [58, 73): only the 8 new tokens.
TEST_F(WindowCache, GoldenScenariosGiveTheColdIdsAndTheRulesCounts) {
  const std::map<std::string, int64_t> want_prefilled = {{"p40_after_p200", 41},
                                                         {"p40_after_p40_prefix20", 41},
                                                         {"p40_after_p40", 1},
                                                         {"continuation_after_p40", 8}};
  ASSERT_EQ(golden_["cache_reuse"].size(), want_prefilled.size());
  for (const auto& sc : golden_["cache_reuse"]) {
    const std::string name = sc["name"];
    SCOPED_TRACE(name);
    Engine e(*model_, *tok_, options(*model_, 256, true), pool_);
    const auto first = test::ids_of(sc["first_request"]["prompt_ids"]);
    const auto second = test::ids_of(sc["second_request"]["prompt_ids"]);
    const auto want = test::ids_of(sc["generation"]["ids"]);
    const Turn a = run(e, first, static_cast<int>(sc["first_request"]["generated_ids"].size()));
    EXPECT_EQ(a.tokens, test::ids_of(sc["first_request"]["generated_ids"]));
    const Turn b = run(e, second, static_cast<int>(want.size()));
    EXPECT_EQ(b.tokens, want);
    EXPECT_EQ(b.stats.prefilled_tokens, want_prefilled.at(name));
    EXPECT_EQ(b.stats.cached_tokens + b.stats.prefilled_tokens,
              static_cast<int64_t>(second.size()));
    const EngineMetrics m = e.metrics();
    EXPECT_EQ(m.kv_window_blocks_free + m.kv_window_blocks_cache_only, m.kv_window_blocks);
    EXPECT_EQ(m.kv_blocks_free + m.kv_blocks_cache_only, m.kv_blocks);
  }
}

// One sequence generating 200 tokens holds at most ceil(16/4) + 1 = 5 window blocks while it
// decodes (ceil((16 + 16 - 1)/4) + 1 = 9 in a prefill chunk of 16), while its main blocks grow.
// With speculative decoding a decode row of 1 + k tokens (k < the step's 16) is bound like a
// chunk: at most 9.
TEST_F(WindowCache, AGeneratingSequencesWindowBlocksStayBounded) {
  for (SpecMode spec : {SpecMode::Off, SpecMode::Ngram}) {
    EngineOptions o = options(*model_, 256, false, 1);
    o.spec.mode = spec;
    Engine e(*model_, *tok_, o, pool_);
    std::vector<int32_t> prompt = {1};
    for (int i = 0; i < 40; ++i) prompt.push_back(3 + (i * 37) % 500);
    Turn t;
    ASSERT_TRUE(e.submit(greedy(prompt, 200, &t)).ok());
    int32_t most_decoding = 0, most = 0;
    while (e.step()) {
      const EngineMetrics m = e.metrics();
      const int32_t used = m.kv_window_blocks - m.kv_window_blocks_free;
      most = std::max(most, used);
      if (t.tokens.size() > 1) most_decoding = std::max(most_decoding, used);
    }
    EXPECT_EQ(t.tokens.size(), 200u);
    if (spec == SpecMode::Off) {
      EXPECT_EQ(most_decoding, 5);
    } else {
      EXPECT_LE(most_decoding, 9);
      EXPECT_GT(t.stats.draft_tokens, 0);
    }
    EXPECT_LE(most, 9);
    std::printf("spec %s: window blocks held: %d decoding, %d at most, of %d\n",
                spec_mode_name(spec), most_decoding, most, e.metrics().kv_window_blocks);
  }
}

// Turns continue their history (the reply's tail holds its window): later turns prefill about
// their new message only. A tiny pool preempts and evicts (window blocks included) and stays
// exact.
TEST_F(WindowCache, CacheOnEqualsCacheOffAlsoWhenPreempting) {
  const int n_gen = 12;
  const auto convs = interleaved_conversations(3, 4, 7);
  Engine plain(*model_, *tok_, options(*model_, 512, false), pool_);
  const auto want = replay(plain, convs, n_gen);
  Engine cached(*model_, *tok_, options(*model_, 512, true), pool_);
  const auto got = replay(cached, convs, n_gen);
  expect_same(want, got, "cache");
  const auto [prefilled, prompt] = later_turns_prefilled_of_prompt(got);
  EXPECT_LT(prefilled * 4, prompt);
  std::printf("later turns prefilled %lld of %lld prompt tokens\n",
              static_cast<long long>(prefilled), static_cast<long long>(prompt));

  // 40 blocks of 4 tokens over every layer for three sessions of up to ~200 tokens.
  Engine tight(*model_, *tok_, options(*model_, 40, true, 3), pool_);
  const auto squeezed = replay(tight, convs, n_gen);
  expect_same(want, squeezed, "tight");
  const EngineMetrics m = tight.metrics();
  EXPECT_GT(m.preemptions + m.cache.evictions + m.cache.window_evictions, 0);
  std::printf(
      "tight: %d main blocks, %d window blocks; %lld preemptions, %lld evictions, %lld "
      "window evictions\n",
      m.kv_blocks, m.kv_window_blocks, static_cast<long long>(m.preemptions),
      static_cast<long long>(m.cache.evictions), static_cast<long long>(m.cache.window_evictions));
}

// Gemma-3-1B's shape: 26 layers, 22 of them sliding-window (512 positions), 1 KV head of 256.
TEST(WindowGeometry, Gemma3OneBillionBytesPerToken) {
  std::optional<SynthSpec> spec = synth_preset("gemma-3-1b");
  ASSERT_TRUE(spec.has_value());
  HParams& hp = spec->hp;
  hp.layer_kinds.assign(static_cast<size_t>(hp.n_layer), LayerKind::Attention);
  for (int64_t l = 0; l < hp.n_layer; ++l)
    if (l % 6 < 5) hp.layer_kinds[static_cast<size_t>(l)] = LayerKind::SlidingWindow;
  hp.number_kv_layers();
  const KvGeometry g = KvGeometry::for_model(hp, TensorType::F16, 32);
  EXPECT_EQ(g.n_layer, 4);
  EXPECT_EQ(g.n_window_layer, 22);
  EXPECT_EQ(g.bytes_per_token(), 4u * 2 * 256 * 2);
  EXPECT_EQ(g.window_bytes_per_token(), 22u * 2 * 256 * 2);
  const int64_t window_blocks = g.window_blocks_wanted(8, 32);
  const size_t at_4k = g.bytes_per_token() * 4096 + g.window_bytes_per_token() * 4096;
  const size_t now =
      g.bytes_per_token() * 4096 +
      g.window_bytes_per_block() * static_cast<size_t>(g.window_blocks_per_sequence());
  std::printf(
      "gemma-3-1b F16: full-attention pool %zu B/token, window pool %zu B/token; a 4096-token "
      "sequence %.1f MiB (all layers: %.1f MiB); default window pool %lld blocks = %.1f MiB\n",
      g.bytes_per_token(), g.window_bytes_per_token(), now / 1048576.0, at_4k / 1048576.0,
      static_cast<long long>(window_blocks),
      g.window_bytes_per_block() * static_cast<size_t>(window_blocks) / 1048576.0);
  EXPECT_LT(now * 3, at_4k);  // 27.7 MiB against 104 MiB
}

}  // namespace
}  // namespace hearth
