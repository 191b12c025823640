// The prefix cache is exact: random multi-turn conversations give bit-identical logits and the
// same greedy tokens with the cache (memory hits, partial-block hits, evictions, disk hits, a
// restart) as without it, for F16, Q8_0 and Q4_0 KV; and the disk tier never serves blocks of
// one KV type to an engine of another.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <random>

#include "common/shared_data.h"
#include "engine/engine.h"
#include "engine/replay_util.h"
#include "model/forward.h"

namespace hearth {
namespace {

using namespace test;

// Sessions of random turns; every session starts with the same "system prompt" so that the
// cache shares it across sessions, and user turns have random lengths so prefixes end at any
// offset inside a block.
std::vector<Conversation> conversations(int sessions, int turns, int32_t n_vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> tok(3, std::min<int32_t>(n_vocab - 1, 5000));
  std::vector<int32_t> system = {1};
  for (int i = 0; i < 45; ++i) system.push_back(tok(rng));
  std::vector<Conversation> out(static_cast<size_t>(sessions));
  for (auto& c : out) {
    for (int t = 0; t < turns; ++t) {
      std::vector<int32_t> u = t == 0 ? system : std::vector<int32_t>{};
      const int n = std::uniform_int_distribution<int>(1, 40)(rng);
      for (int i = 0; i < n; ++i) u.push_back(tok(rng));
      c.user.push_back(std::move(u));
    }
  }
  return out;
}

EngineOptions options(const Model& m, TensorType kv, int32_t blocks, bool cache,
                      const std::string& dir = {}, int max_running = 4) {
  EngineOptions o = cache_test_options(m, blocks, cache, max_running);
  o.kv_type = kv;
  o.max_seq_tokens = 1024;
  o.cache_dir = dir;
  set_kv_blocks(o, m, blocks);
  return o;
}

int64_t sum_cached(const std::vector<std::vector<Turn>>& r) {
  int64_t n = 0;
  for (const auto& s : r)
    for (const auto& t : s) n += t.stats.cached_tokens;
  return n;
}

class PrefixCacheExact : public ::testing::TestWithParam<std::tuple<std::string, TensorType>> {};

TEST_P(PrefixCacheExact, CachedEqualsUncached) {
  const auto& [name, kv] = GetParam();
  HEARTH_SHARED_OR_SKIP(path, "models/synthetic/" + name + ".gguf");
  auto model = Model::load(path);
  const Tokenizer tok = Tokenizer::from_gguf(model->file());
  ops::ThreadPool pool(2);
  const int n_gen = 6;
  const auto convs = conversations(3, 4, model->hparams().n_vocab, 7);
  std::vector<std::vector<int32_t>> hist;

  // Reference: no cache, roomy pool.
  Engine plain(*model, tok, options(*model, kv, 256, false), pool);
  const auto want = replay(plain, convs, n_gen, &hist);
  EXPECT_EQ(sum_cached(want), 0);

  {  // Memory hits (whole and partial blocks).
    Engine e(*model, tok, options(*model, kv, 256, true), pool);
    const auto got = replay(e, convs, n_gen, &hist);
    expect_same(want, got, "memory");
    EXPECT_GT(sum_cached(got), 0);
    for (size_t s = 0; s < got.size(); ++s)  // every later turn reuses its whole history
      for (size_t t = 1; t < got[s].size(); ++t)
        EXPECT_GE(got[s][t].stats.cached_tokens + 1 + n_gen,
                  got[s][t].stats.prompt_tokens - static_cast<int64_t>(convs[s].user[t].size()))
            << "session " << s << " turn " << t;
    // A branch: an earlier point of a conversation continued differently, diverging inside
    // a block, reuses the common part through a copied block.
    const std::vector<int32_t>& h = hist[0];
    std::vector<int32_t> branch(h.begin(), h.begin() + 70);
    branch.push_back(4);
    Turn b_cached, b_plain;
    ASSERT_TRUE(e.submit(greedy(branch, n_gen, &b_cached)).ok());
    e.run_until_idle();
    ASSERT_TRUE(plain.submit(greedy(branch, n_gen, &b_plain)).ok());
    plain.run_until_idle();
    EXPECT_EQ(b_cached.stats.cached_tokens, 70);
    EXPECT_EQ(b_cached.tokens, b_plain.tokens);
    EXPECT_EQ(b_cached.logit_hashes, b_plain.logit_hashes);
    EXPECT_EQ(e.kv_pool().n_free() + e.cache_only_blocks(), e.kv_pool().n_blocks());
  }
  {  // A pool that cannot hold every session: evictions, then recomputation.
    Engine e(*model, tok, options(*model, kv, 14, true), pool);
    const auto got = replay(e, convs, n_gen, &hist);
    expect_same(want, got, "evicting");
    EXPECT_GT(e.metrics().cache.evictions, 0);
    EXPECT_EQ(e.kv_pool().n_free() + e.cache_only_blocks(), e.kv_pool().n_blocks());
  }
  const std::string dir = (std::filesystem::temp_directory_path() /
                           ("hearth-cache-exact-" + std::to_string(::getpid()) + "-" + name))
                              .string();
  std::filesystem::remove_all(dir);
  {  // Evicted blocks go to disk and come back on hits (one session at a time in a pool that
     // holds about one and a half).
    Engine e(*model, tok, options(*model, kv, 12, true, dir, 1), pool);
    const auto got = replay(e, convs, n_gen, &hist);
    expect_same(want, got, "disk");
    EXPECT_GT(e.metrics().cache.disk_hit_tokens, 0);
  }
  {  // Restart: a fresh engine over the same directory serves the histories from disk.
    Engine e(*model, tok, options(*model, kv, 64, true, dir), pool);
    for (size_t s = 0; s < hist.size(); ++s) {
      Turn a, b;
      ASSERT_TRUE(e.submit(greedy(hist[s], n_gen, &a)).ok());
      e.run_until_idle();
      ASSERT_TRUE(plain.submit(greedy(hist[s], n_gen, &b)).ok());
      plain.run_until_idle();
      EXPECT_EQ(a.tokens, b.tokens) << "restart session " << s;
      EXPECT_EQ(a.logit_hashes, b.logit_hashes) << "restart session " << s;
      EXPECT_GE(a.stats.cached_tokens, static_cast<int64_t>(hist[s].size()) - n_gen - 1)
          << "restart session " << s;
    }
  }
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Models, PrefixCacheExact,
                         ::testing::Values(std::make_tuple("qwen3-Q8_0", TensorType::F16),
                                           std::make_tuple("qwen3-Q8_0", TensorType::Q8_0),
                                           std::make_tuple("llama-untied-Q8_0", TensorType::F16),
                                           std::make_tuple("qwen2-Q4_K", TensorType::Q8_0),
                                           std::make_tuple("qwen3-Q8_0", TensorType::Q4_0)));

// The cache directory is keyed by the KV type (and block geometry): blocks written by a Q4_0
// engine come back to a Q4_0 engine after a restart, and never to an engine of another type,
// which recomputes and gives its own uncached result.
TEST(PrefixCacheDisk, KvTypeIsPartOfTheKey) {
  HEARTH_SHARED_OR_SKIP(path, "models/synthetic/qwen3-Q8_0.gguf");
  auto model = Model::load(path);
  const Tokenizer tok = Tokenizer::from_gguf(model->file());
  ops::ThreadPool pool(2);
  const int n_gen = 4;
  const std::vector<int32_t> prompt = conversations(1, 1, model->hparams().n_vocab, 3)[0].user[0];
  const std::string dir = (std::filesystem::temp_directory_path() /
                           ("hearth-cache-kvtype-" + std::to_string(::getpid())))
                              .string();
  std::filesystem::remove_all(dir);
  {  // Fill the directory from a Q4_0 engine (flushed on destruction).
    Engine e(*model, tok, options(*model, TensorType::Q4_0, 64, true, dir), pool);
    Turn t;
    ASSERT_TRUE(e.submit(greedy(prompt, n_gen, &t)).ok());
    e.run_until_idle();
  }
  for (TensorType other : {TensorType::F16, TensorType::Q8_0, TensorType::F32}) {
    Engine plain(*model, tok, options(*model, other, 64, false), pool);
    Engine e(*model, tok, options(*model, other, 64, true, dir), pool);
    Turn a, b;
    ASSERT_TRUE(e.submit(greedy(prompt, n_gen, &a)).ok());
    e.run_until_idle();
    ASSERT_TRUE(plain.submit(greedy(prompt, n_gen, &b)).ok());
    plain.run_until_idle();
    EXPECT_EQ(a.stats.cached_tokens, 0) << type_name(other);
    EXPECT_EQ(e.metrics().cache.disk_hit_tokens, 0) << type_name(other);
    EXPECT_EQ(a.logit_hashes, b.logit_hashes) << type_name(other);
  }
  {  // A Q4_0 engine after a restart: served from disk, the same logits as computing afresh.
    Engine plain(*model, tok, options(*model, TensorType::Q4_0, 64, false), pool);
    Engine e(*model, tok, options(*model, TensorType::Q4_0, 64, true, dir), pool);
    Turn a, b;
    ASSERT_TRUE(e.submit(greedy(prompt, n_gen, &a)).ok());
    e.run_until_idle();
    ASSERT_TRUE(plain.submit(greedy(prompt, n_gen, &b)).ok());
    plain.run_until_idle();
    EXPECT_GT(e.metrics().cache.disk_hit_tokens, 0);
    EXPECT_GT(a.stats.cached_tokens, 0);
    EXPECT_EQ(a.logit_hashes, b.logit_hashes);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace hearth
