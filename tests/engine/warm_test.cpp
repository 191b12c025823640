// Next-turn warming in the engine (GenerationRequest::warm): a warm request computes its prompt
// into the prefix cache as background work, so the real request that follows prefills only what
// is new; it runs only while nothing else does and gives way at a step boundary; it never
// evicts cached work; and what a later request reuses of it is exact.
#include <gtest/gtest.h>

#include <random>

#include "common/shared_data.h"
#include "engine/engine.h"
#include "engine/replay_util.h"
#include "model/forward.h"

namespace hearth {
namespace {

using namespace test;

GenerationRequest warm_request(const std::vector<int32_t>& prompt, FinishReason* reason) {
  GenerationRequest r;
  r.prompt = prompt;
  r.warm = true;
  r.on_event = [reason](const EngineEvent& e) {
    EXPECT_EQ(e.kind, EngineEvent::Kind::Finished) << "a warm request generates nothing";
    if (e.kind == EngineEvent::Kind::Finished) *reason = e.reason;
  };
  return r;
}

std::vector<int32_t> random_tokens(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> t = {1};
  while (t.size() < n) t.push_back(std::uniform_int_distribution<int32_t>(3, 500)(rng));
  return t;
}

class Warm : public ::testing::Test {
 protected:
  void SetUp() override {
    HEARTH_SHARED_OR_SKIP(path, "models/synthetic/qwen3-Q8_0.gguf");
    model_ = Model::load(path);
    tok_ = std::make_unique<Tokenizer>(Tokenizer::from_gguf(model_->file()));
  }
  EngineOptions options(int32_t blocks) const {
    EngineOptions o = cache_test_options(*model_, blocks, true, 4);
    o.step_tokens = 32;
    return o;
  }
  std::unique_ptr<Model> model_;
  std::unique_ptr<Tokenizer> tok_;
  ops::ThreadPool pool_{2};
};

// A conversation's next prompt, warmed while "the user reads": the next request prefills only
// its own new tokens, and its reply equals the one an engine without warming gives.
TEST_F(Warm, NextRequestPrefillsOnlyItsNewText) {
  const std::vector<int32_t> history = random_tokens(150, 1);
  std::vector<int32_t> next = history;
  for (int32_t t : random_tokens(20, 2)) next.push_back(t);

  Engine plain(*model_, *tok_, options(128), pool_);
  const Turn want = run(plain, next, 16);

  Engine e(*model_, *tok_, options(128), pool_);
  FinishReason reason = FinishReason::Error;
  ASSERT_TRUE(e.submit(warm_request(history, &reason)).ok());
  EXPECT_EQ(e.metrics().running, 0);
  e.run_until_idle();
  EXPECT_EQ(reason, FinishReason::Length);
  EngineMetrics m = e.metrics();
  EXPECT_EQ(m.warm_tokens, 150);
  EXPECT_EQ(m.prefilled_tokens, 0) << "warm work is not counted as prefill";
  EXPECT_EQ(m.warming, 0);

  const Turn got = run(e, next, 16);
  EXPECT_EQ(got.tokens, want.tokens);
  EXPECT_EQ(got.logit_hashes, want.logit_hashes);
  EXPECT_EQ(got.stats.cached_tokens, 150);
  EXPECT_EQ(got.stats.prefilled_tokens, static_cast<int64_t>(next.size()) - 150);
  m = e.metrics();
  EXPECT_EQ(m.warm_hit_tokens, 150);
  EXPECT_EQ(m.warm_wasted_tokens, 0);
  EXPECT_EQ(m.kv_blocks_free + m.kv_blocks_cache_only, m.kv_blocks) << "leaked blocks";
}

// A real request arriving while a long warm request runs takes over at the next step: the warm
// work waits (what it computed is cached) and resumes when the engine is idle again.
TEST_F(Warm, GivesWayToARealRequestAtTheNextStep) {
  const std::vector<int32_t> long_prompt = random_tokens(300, 3);
  const std::vector<int32_t> other = random_tokens(40, 4);
  Engine plain(*model_, *tok_, options(128), pool_);
  const Turn want = run(plain, other, 8);

  Engine e(*model_, *tok_, options(128), pool_);
  FinishReason reason = FinishReason::Error;
  ASSERT_TRUE(e.submit(warm_request(long_prompt, &reason)).ok());
  ASSERT_TRUE(e.step());
  ASSERT_TRUE(e.step());
  const int64_t warm_before = e.metrics().warm_tokens;
  EXPECT_GT(warm_before, 0);
  EXPECT_LT(warm_before, 300);
  EXPECT_EQ(e.metrics().warming, 1);

  Turn t;
  ASSERT_TRUE(e.submit(greedy(other, 8, &t)).ok());
  // From the next step until the real request is done, no warm work is computed.
  while (t.stats.generated_tokens == 0 && e.step())
    EXPECT_EQ(e.metrics().warm_tokens, warm_before) << "warm work ran beside a real request";
  EXPECT_EQ(t.tokens, want.tokens);
  EXPECT_EQ(t.logit_hashes, want.logit_hashes);
  e.run_until_idle();
  EXPECT_EQ(reason, FinishReason::Length);
  // The warm request resumed from what it had cached: 300 tokens computed once.
  EXPECT_EQ(e.metrics().warm_tokens, 300);
  const Turn again = run(e, long_prompt, 4);
  EXPECT_EQ(again.stats.cached_tokens, 299);
}

// A warm request the pool's free blocks cannot hold is dropped: cached work is never evicted
// for it.
TEST_F(Warm, NeverEvictsCachedWork) {
  Engine e(*model_, *tok_, options(12), pool_);  // 12 blocks of 32 tokens
  const std::vector<int32_t> cached = random_tokens(300, 5);
  run(e, cached, 4);
  const int64_t cache_only = e.metrics().kv_blocks_cache_only;
  EXPECT_GE(cache_only, 9);
  FinishReason reason = FinishReason::Error;
  ASSERT_TRUE(e.submit(warm_request(random_tokens(200, 6), &reason)).ok());
  e.run_until_idle();
  EXPECT_EQ(reason, FinishReason::Cancelled);
  EXPECT_EQ(e.metrics().kv_blocks_cache_only, cache_only);
  EXPECT_EQ(e.metrics().warm_tokens, 0);
  EXPECT_EQ(run(e, cached, 4).stats.cached_tokens, 299);
}

// Warm requests beyond max_warm push out the oldest; cancel() drops one; neither counts against
// the queue of real requests.
TEST_F(Warm, KeepsTheNewestAndCanBeCancelled) {
  EngineOptions o = options(128);
  o.max_warm = 2;
  o.max_running = 1;
  o.max_queued = 0;
  Engine e(*model_, *tok_, o, pool_);
  std::vector<FinishReason> reasons(4, FinishReason::Error);
  std::vector<int64_t> ids;
  for (int i = 0; i < 4; ++i) {
    const SubmitResult r = e.submit(warm_request(random_tokens(40, 10 + i), &reasons[i]));
    ASSERT_TRUE(r.ok()) << r.error;
    ids.push_back(r.id);
  }
  e.cancel(ids[3]);
  Turn t;
  EXPECT_TRUE(e.submit(greedy(random_tokens(10, 20), 2, &t)).ok()) << "warm work is not queued";
  e.run_until_idle();
  EXPECT_EQ(t.tokens.size(), 2u);
  EXPECT_EQ(reasons[0], FinishReason::Cancelled);
  EXPECT_EQ(reasons[1], FinishReason::Cancelled);
  EXPECT_EQ(reasons[2], FinishReason::Length);
  EXPECT_EQ(reasons[3], FinishReason::Cancelled);
}

// Without a prefix cache there is nowhere to warm into: refused at once, nothing computed.
TEST_F(Warm, RefusedWithoutAPrefixCache) {
  EngineOptions o = options(64);
  o.prefix_cache = false;
  Engine e(*model_, *tok_, o, pool_);
  FinishReason reason = FinishReason::Error;
  EXPECT_FALSE(e.submit(warm_request(random_tokens(40, 7), &reason)).ok());
  e.run_until_idle();
  EXPECT_EQ(e.metrics().warm_tokens, 0);
}

}  // namespace
}  // namespace hearth
