// The engine against the single-sequence path: batched, chunked, preempted or interleaved with
// cancellations, every sequence produces exactly the tokens it produces alone, and every KV
// block returns to the pool.
#include "engine/engine.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <random>
#include <set>

#include "common/shared_data.h"
#include "model/forward.h"
#include "sampling/basic_sampler.h"

namespace hearth {
namespace {

struct Fixture {
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tok;
};

Fixture load(const std::string& path) {
  Fixture f;
  f.model = Model::load(path);
  f.tok = std::make_unique<Tokenizer>(Tokenizer::from_gguf(f.model->file()));
  return f;
}

std::vector<int32_t> prompt(int n, int seed) {
  std::vector<int32_t> p = {1};
  for (int i = 1; i < n; ++i) p.push_back(3 + (i * 37 + seed * 101) % 500);
  return p;
}

// Greedy continuation computed alone on the single-sequence path.
std::vector<int32_t> alone(const Fixture& f, const std::vector<int32_t>& p, int n, TensorType kv,
                           ops::ThreadPool& pool, const Tokenizer& tok) {
  ForwardOptions fo;
  fo.n_ctx = 512;
  fo.kv_type = kv;
  Forward fwd(*f.model, fo, pool);
  std::vector<float> logits = fwd.eval(p);
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) {
    const int32_t id = argmax(logits);
    out.push_back(id);
    if (tok.is_eog(id)) break;
    const int32_t one[1] = {id};
    logits = fwd.eval(one);
  }
  return out;
}

struct Collected {
  std::vector<int32_t> tokens;
  std::string text;
  bool finished = false;
  FinishReason reason = FinishReason::Stop;
  RequestStats stats;
};

GenerationRequest request(const std::vector<int32_t>& p, int max_tokens, Collected* c) {
  GenerationRequest r;
  r.prompt = p;
  r.max_tokens = max_tokens;
  r.on_event = [c](const EngineEvent& e) {
    c->text += e.text;  // Finished may carry held-back text
    if (e.kind == EngineEvent::Kind::Token) {
      c->tokens.push_back(e.token);
    } else {
      c->finished = true;
      c->reason = e.reason;
      c->stats = e.stats;
    }
  };
  return r;
}

class EngineExact : public ::testing::TestWithParam<std::tuple<std::string, TensorType>> {};

TEST_P(EngineExact, BatchedChunkedAndPreemptedEqualAlone) {
  const auto& [name, kv] = GetParam();
  HEARTH_SHARED_OR_SKIP(path, "models/synthetic/" + name + ".gguf");
  Fixture f = load(path);
  ops::ThreadPool pool(2);
  const int n_gen = 12;
  std::vector<std::vector<int32_t>> prompts = {prompt(40, 1), prompt(9, 2), prompt(75, 3),
                                               prompt(3, 4), prompt(130, 5)};
  std::vector<std::vector<int32_t>> want;
  for (const auto& p : prompts) want.push_back(alone(f, p, n_gen, kv, pool, *f.tok));

  // Roomy, and tight enough to force preemption; with and without speculative decoding.
  for (size_t kv_blocks : {64u, 6u}) {
    for (SpecMode spec : {SpecMode::Off, SpecMode::Ngram})
      for (int64_t step_tokens : {int64_t{7}, int64_t{64}}) {
        EngineOptions o;
        o.spec.mode = spec;
        o.kv_type = kv;
        o.max_running = 4;
        o.step_tokens = step_tokens;
        o.max_seq_tokens = 512;
        o.kv_bytes = kv_blocks * 2 * kv_layout_for(f.model->hparams(), kv, 32).block_bytes() *
                     static_cast<size_t>(f.model->hparams().n_layer);
        Engine engine(*f.model, *f.tok, o, pool);
        ASSERT_EQ(engine.kv_pool().n_blocks(), static_cast<int32_t>(kv_blocks));
        std::vector<Collected> got(prompts.size());
        for (size_t i = 0; i < prompts.size(); ++i)
          ASSERT_TRUE(engine.submit(request(prompts[i], n_gen, &got[i])).ok());
        engine.run_until_idle();
        int64_t preemptions = 0;
        for (size_t i = 0; i < prompts.size(); ++i) {
          EXPECT_TRUE(got[i].finished);
          EXPECT_EQ(got[i].tokens, want[i])
              << "request " << i << " blocks " << kv_blocks << " step " << step_tokens << " reason "
              << finish_reason_name(got[i].reason) << " spec " << spec_mode_name(spec);
          EXPECT_EQ(got[i].stats.prompt_tokens, static_cast<int64_t>(prompts[i].size()));
          preemptions += got[i].stats.preemptions;
        }
        EXPECT_EQ(engine.kv_pool().n_free() + engine.cache_only_blocks(),
                  engine.kv_pool().n_blocks())
            << "leaked KV blocks";
        if (kv_blocks == 6 && spec == SpecMode::Off) {
          EXPECT_GT(preemptions, 0) << "the tight pool should have forced preemption";
        }
      }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, EngineExact,
                         ::testing::Values(std::make_tuple("llama-untied-Q8_0", TensorType::F16),
                                           std::make_tuple("qwen2-Q4_K", TensorType::Q8_0),
                                           std::make_tuple("qwen3-Q6_K", TensorType::F16),
                                           std::make_tuple("qwen3-Q8_0", TensorType::Q4_0)));

TEST(Engine, CancelMidPrefillAndMidDecodeReturnsEveryBlock) {
  HEARTH_SHARED_OR_SKIP(path, "models/synthetic/qwen3-Q8_0.gguf");
  Fixture f = load(path);
  ops::ThreadPool pool(2);
  EngineOptions o;
  o.step_tokens = 16;
  o.max_seq_tokens = 512;
  Engine engine(*f.model, *f.tok, o, pool);
  Collected a, b, c;
  const int64_t ia = engine.submit(request(prompt(200, 1), 50, &a)).id;
  const int64_t ib = engine.submit(request(prompt(10, 2), 50, &b)).id;
  const int64_t ic = engine.submit(request(prompt(5, 3), 50, &c)).id;
  (void)ib;
  for (int i = 0; i < 4; ++i) engine.step();  // a is mid-prefill, b and c are decoding
  EXPECT_FALSE(b.tokens.empty());
  engine.cancel(ia);
  engine.cancel(ic);
  engine.cancel(12345);  // unknown: ignored
  engine.run_until_idle();
  EXPECT_TRUE(a.finished && c.finished && b.finished);
  EXPECT_EQ(a.reason, FinishReason::Cancelled);
  EXPECT_EQ(c.reason, FinishReason::Cancelled);
  EXPECT_EQ(b.reason, FinishReason::Length);
  EXPECT_EQ(b.tokens.size(), 50u);
  EXPECT_EQ(engine.kv_pool().n_free() + engine.cache_only_blocks(), engine.kv_pool().n_blocks());
}

TEST(Engine, PromptsThatFitShareAStepAndShortOnesGoAheadOfALongOne) {
  HEARTH_SHARED_OR_SKIP(path, "models/synthetic/qwen3-Q8_0.gguf");
  Fixture f = load(path);
  ops::ThreadPool pool(2);
  EngineOptions o;
  o.step_tokens = 64;
  o.max_seq_tokens = 512;
  {
    // Four prompts that fit one step together: all four get their first token from it.
    Engine engine(*f.model, *f.tok, o, pool);
    std::vector<Collected> got(4);
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_TRUE(
          engine.submit(request(prompt(12, static_cast<uint32_t>(20 + i)), 3, &got[i])).ok());
    engine.step();
    for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i].tokens.size(), 1u) << "request " << i;
    engine.run_until_idle();
  }
  {
    // A short prompt arriving during a long prefill gets the next step to itself.
    o.step_tokens = 32;
    Engine engine(*f.model, *f.tok, o, pool);
    Collected lng, shrt;
    ASSERT_TRUE(engine.submit(request(prompt(300, 30), 2, &lng)).ok());
    engine.step();
    engine.step();
    ASSERT_TRUE(engine.submit(request(prompt(20, 31), 2, &shrt)).ok());
    engine.step();
    EXPECT_EQ(shrt.tokens.size(), 1u);
    EXPECT_TRUE(lng.tokens.empty());
    engine.run_until_idle();
    EXPECT_EQ(lng.tokens.size(), 2u);
    EXPECT_EQ(shrt.tokens.size(), 2u);
  }
}

// A long prompt alone is prefilled in chunks sized by their cost (engine/step_cost.h): the full
// step at depth 0, fewer tokens as its attention reaches further back.
TEST(Engine, DeepPrefillChunksAreSizedByTheirCost) {
  HEARTH_SHARED_OR_SKIP(path, "models/synthetic/qwen3-Q8_0.gguf");
  Fixture f = load(path);
  ops::ThreadPool pool(2);
  EngineOptions o;
  o.step_tokens = 32;
  o.max_seq_tokens = 512;
  o.prefix_cache = false;
  Engine engine(*f.model, *f.tok, o, pool);
  const StepCost cost(f.model->hparams());
  const int64_t n_prompt = 480;
  Collected got;
  ASSERT_TRUE(engine.submit(request(prompt(static_cast<int>(n_prompt), 40), 2, &got)).ok());
  std::vector<int64_t> chunks;
  int64_t done = 0;
  while (done < n_prompt) {
    ASSERT_TRUE(engine.step());
    const int64_t now = engine.metrics().prefilled_tokens;
    chunks.push_back(now - done);
    done = now;
  }
  ASSERT_EQ(done, n_prompt);
  int64_t depth = 0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    EXPECT_EQ(chunks[i], cost.fit(depth, n_prompt - depth, cost.chunk(0, 32))) << "step " << i;
    depth += chunks[i];
  }
  EXPECT_EQ(chunks.front(), 32);
  EXPECT_LT(chunks[chunks.size() - 2], 32);  // the last full-allowance chunk, deep in the prompt
  engine.run_until_idle();
  EXPECT_EQ(got.tokens.size(), 2u);
}

TEST(Engine, StressRandomSubmitCancelFinishNearExhaustion) {
  HEARTH_SHARED_OR_SKIP(path, "models/synthetic/llama-tied-Q4_K.gguf");
  Fixture f = load(path);
  ops::ThreadPool pool(2);
  const TensorType kv = TensorType::F16;
  EngineOptions o;
  o.kv_type = kv;
  o.max_running = 6;
  o.max_queued = 100;
  o.step_tokens = 48;
  o.max_seq_tokens = 512;
  o.kv_bytes = 14 * 2 * kv_layout_for(f.model->hparams(), kv, 32).block_bytes() *
               static_cast<size_t>(f.model->hparams().n_layer);
  Engine engine(*f.model, *f.tok, o, pool);
  std::mt19937 rng(7);
  std::map<int64_t, std::pair<std::vector<int32_t>, int>> submitted;  // id -> prompt, max tokens
  std::map<int64_t, std::unique_ptr<Collected>> results;
  std::set<int64_t> cancelled;
  int events = 0;
  while (events < 300) {
    const int what = static_cast<int>(rng() % 10);
    if (what < 4) {
      auto p = prompt(2 + static_cast<int>(rng() % 120), static_cast<int>(rng() % 1000));
      const int max_tokens = 1 + static_cast<int>(rng() % 16);
      auto c = std::make_unique<Collected>();
      SubmitResult r = engine.submit(request(p, max_tokens, c.get()));
      if (r.ok()) {
        submitted[r.id] = {p, max_tokens};
        results[r.id] = std::move(c);
      }
    } else if (what < 5 && !submitted.empty()) {
      auto it = submitted.begin();
      std::advance(it, static_cast<long>(rng() % submitted.size()));
      engine.cancel(it->first);
      cancelled.insert(it->first);
    } else {
      engine.step();
    }
    ++events;
  }
  engine.run_until_idle();
  EXPECT_EQ(engine.kv_pool().n_free() + engine.cache_only_blocks(), engine.kv_pool().n_blocks())
      << "leaked KV blocks";
  int checked = 0;
  for (auto& [id, c] : results) {
    ASSERT_TRUE(c->finished) << id;
    if (cancelled.count(id)) {
      continue;  // may have finished before the cancel landed; either way it ended
    }
    EXPECT_NE(c->reason, FinishReason::Cancelled);
    const auto& [p, max_tokens] = submitted[id];
    EXPECT_EQ(c->tokens, alone(f, p, max_tokens, kv, pool, *f.tok)) << "request " << id;
    ++checked;
  }
  EXPECT_GT(checked, 20);
}

TEST(Engine, AdmissionLimitsAndInvalidRequests) {
  HEARTH_SHARED_OR_SKIP(path, "models/synthetic/qwen3-F32.gguf");
  Fixture f = load(path);
  ops::ThreadPool pool(1);
  EngineOptions o;
  o.max_running = 1;
  o.max_queued = 1;
  o.max_seq_tokens = 64;
  Engine engine(*f.model, *f.tok, o, pool);
  Collected a, b, c;
  EXPECT_TRUE(engine.submit(request(prompt(5, 1), 2, &a)).ok());
  EXPECT_TRUE(engine.submit(request(prompt(5, 2), 2, &b)).ok());
  SubmitResult busy = engine.submit(request(prompt(5, 3), 2, &c));
  EXPECT_FALSE(busy.ok());
  EXPECT_NE(busy.error.find("busy"), std::string::npos);
  EXPECT_FALSE(engine.submit(request({}, 2, &c)).ok());
  EXPECT_FALSE(engine.submit(request({1, 99999}, 2, &c)).ok());
  EXPECT_FALSE(engine.submit(request(prompt(64, 1), 2, &c)).ok());  // no room to generate
  engine.run_until_idle();
  EXPECT_TRUE(a.finished && b.finished);
  EXPECT_TRUE(engine.submit(request(prompt(5, 3), 2, &c)).ok());  // room again
  engine.run_until_idle();
  EXPECT_TRUE(c.finished);
}

// The default pool holds whole blocks for every running sequence: a context that is not a
// multiple of the block size must still run to its limit (it used to round down to fewer
// blocks than one sequence needs and end the request with context_full).
TEST(Engine, DefaultPoolFitsFullContextsOfEverySequence) {
  HEARTH_SHARED_OR_SKIP(path, "models/synthetic/qwen3-F32.gguf");
  Fixture f = load(path);
  ops::ThreadPool pool(1);
  EngineOptions o;
  o.max_running = 2;
  o.max_seq_tokens = 49;  // 2 blocks of 32 per sequence, 1.53 in tokens
  Engine engine(*f.model, *f.tok, o, pool);
  EXPECT_GE(engine.metrics().kv_blocks, 4);
  Collected a, b;
  GenerationRequest ra = request(prompt(32, 1), 16, &a), rb = request(prompt(32, 2), 16, &b);
  ra.stop_at_eog = rb.stop_at_eog = false;
  ASSERT_TRUE(engine.submit(std::move(ra)).ok());
  ASSERT_TRUE(engine.submit(std::move(rb)).ok());
  engine.run_until_idle();
  ASSERT_TRUE(a.finished && b.finished);
  EXPECT_EQ(a.reason, FinishReason::Length);
  EXPECT_EQ(b.reason, FinishReason::Length);
  EXPECT_EQ(a.tokens.size(), 16u);
  EXPECT_EQ(b.tokens.size(), 16u);
  EXPECT_EQ(b.stats.preemptions + a.stats.preemptions, 0);
}

TEST(Engine, BackgroundThreadStreamsText) {
  HEARTH_SHARED_OR_SKIP(path, "models/stories260K.gguf");
  Fixture f = load(path);
  ops::ThreadPool pool(2);
  EngineOptions o;
  o.max_seq_tokens = 256;
  Engine engine(*f.model, *f.tok, o, pool);
  std::mutex mu;
  std::condition_variable cv;
  Collected c;
  GenerationRequest r = request({1}, 64, &c);
  auto inner = r.on_event;
  r.on_event = [&](const EngineEvent& e) {
    std::lock_guard lock(mu);
    inner(e);
    cv.notify_all();
  };
  engine.start();
  ASSERT_TRUE(engine.submit(std::move(r)).ok());
  std::unique_lock lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return c.finished; }));
  EXPECT_EQ(c.text.rfind(" Once upon a time, there was a little girl named Lily.", 0), 0u)
      << c.text;
  EXPECT_GT(c.stats.ttft_ms, 0.0);
  lock.unlock();
  engine.stop();
}

}  // namespace
}  // namespace hearth
