// Speculative decoding (engine/speculation.h) is exact: with n-gram drafts, greedy and seeded
// sampled output is bit-identical to decoding without them, on every model file in the shared
// data, with and without prefix-cache hits (whole and partial blocks), under preemption, across
// a disk-tier restart and after a cancellation; and the drafting policy's parts do what they say.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <random>

#include "common/shared_data.h"
#include "engine/engine.h"
#include "engine/replay_util.h"
#include "engine/speculation.h"
#include "model/forward.h"
#include "tools/synth.h"
#include "util/error.h"

namespace hearth {
namespace {

using namespace test;

TEST(NgramLookup, ProposesWhatFollowedTheLongestRecentMatch) {
  // "1 2 3 9 ... 1 2 3 7 ... 1 2 3": the latest occurrence of the 3-gram wins.
  const std::vector<int32_t> t = {1, 2, 3, 9, 9, 5, 1, 2, 3, 7, 8, 6, 5, 4, 1, 2, 3};
  EXPECT_EQ(ngram_lookup(t, 2, 6, 4), (std::vector<int32_t>{7, 8, 6, 5}));
  EXPECT_EQ(ngram_lookup(t, 2, 6, 2), (std::vector<int32_t>{7, 8}));
  // A longer match beats a more recent shorter one: "5 1 2 3" occurred once, followed by 7.
  const std::vector<int32_t> u = {5, 1, 2, 3, 7, 0, 2, 3, 4, 5, 1, 2, 3};
  EXPECT_EQ(ngram_lookup(u, 2, 6, 3), (std::vector<int32_t>{7, 0, 2}));
  // The draft stops at the end of the sequence.
  const std::vector<int32_t> v = {4, 4, 4};
  EXPECT_EQ(ngram_lookup(v, 2, 6, 8), (std::vector<int32_t>{4}));
  EXPECT_TRUE(ngram_lookup(std::vector<int32_t>{1, 2, 3, 4}, 2, 6, 8).empty());
  EXPECT_TRUE(ngram_lookup(t, 2, 6, 0).empty());
  EXPECT_TRUE(ngram_lookup(std::vector<int32_t>{}, 2, 6, 8).empty());
}

TEST(DraftLength, GrowsOnHitsShrinksOnMissesAndPauses) {
  DraftLength d(16);
  EXPECT_EQ(d.wanted(), 4);
  d.verified(4, 4);
  EXPECT_EQ(d.wanted(), 8);
  d.verified(8, 8);
  d.verified(16, 16);
  EXPECT_EQ(d.wanted(), 16);  // capped
  d.verified(16, 2);
  EXPECT_EQ(d.wanted(), 3);
  d.verified(3, 0);
  EXPECT_EQ(d.wanted(), 1);
  d.verified(1, 0);  // second miss in a row: one step without drafting
  EXPECT_EQ(d.wanted(), 0);
  EXPECT_EQ(d.wanted(), 1);
  d.verified(1, 0);  // the next miss pauses twice as long
  EXPECT_EQ(d.wanted(), 0);
  EXPECT_EQ(d.wanted(), 0);
  EXPECT_EQ(d.wanted(), 1);
  d.verified(1, 1);  // a hit resets the pause
  d.verified(2, 0);
  EXPECT_EQ(d.wanted(), 1);
}

// Conversations whose turns repeat stretches of their history (as quoting and code edits do), so
// that prompt lookup finds drafts; random lengths put prefixes at any offset in a block.
std::vector<Conversation> repeating_conversations(int sessions, int turns, int32_t n_vocab,
                                                  uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> tok(3, std::min<int32_t>(n_vocab - 1, 5000));
  std::vector<Conversation> out(static_cast<size_t>(sessions));
  for (auto& c : out) {
    std::vector<int32_t> hist = {1};
    for (int t = 0; t < turns; ++t) {
      std::vector<int32_t> u = t == 0 ? std::vector<int32_t>{1} : std::vector<int32_t>{};
      const int n = std::uniform_int_distribution<int>(4, 24)(rng);
      for (int i = 0; i < n; ++i) u.push_back(tok(rng));
      // Then a quote of up to 24 earlier tokens (or of this turn).
      const std::vector<int32_t>& from = hist.size() > u.size() ? hist : u;
      const size_t len = std::min<size_t>(from.size() - 1, 24);
      const size_t at = std::uniform_int_distribution<size_t>(0, from.size() - len)(rng);
      u.insert(u.end(), from.begin() + static_cast<std::ptrdiff_t>(at),
               from.begin() + static_cast<std::ptrdiff_t>(at + len));
      hist.insert(hist.end(), u.begin(), u.end());
      c.user.push_back(std::move(u));
    }
  }
  return out;
}

EngineOptions spec_options(const Model& m, SpecMode mode, int32_t blocks, bool cache,
                           const std::string& dir = {}) {
  EngineOptions o = cache_test_options(m, blocks, cache, 3);
  o.spec.mode = mode;
  o.spec.draft_max = 8;
  o.cache_dir = dir;
  return o;
}

int64_t sum(const std::vector<std::vector<Turn>>& r, int64_t RequestStats::*field) {
  int64_t n = 0;
  for (const auto& s : r)
    for (const auto& t : s) n += t.stats.*field;
  return n;
}

std::vector<std::string> model_files() {
  std::vector<std::string> out = {"models/stories260K.gguf"};
  for (const char* dir : {"models/synthetic", "models/synthetic-arch"}) {
    if (!shared_exists(dir)) continue;
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(shared_path(dir)))
      if (e.path().extension() == ".gguf") names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    for (const auto& n : names) out.push_back(std::string(dir) + "/" + n);
  }
  return out;
}

// A model file's stem as a test name (letters and digits; others become '_').
std::string test_name(const std::string& path) {
  std::string n = std::filesystem::path(path).stem().string();
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

class SpecExact : public ::testing::TestWithParam<std::string> {};

// Greedy: off without a cache is the reference; n-gram drafts with memory hits, with a pool so
// small that sequences are preempted, and across a restart from the disk tier give the same
// tokens and the same logits rows.
TEST_P(SpecExact, GreedyEqualsPlainDecoding) {
  HEARTH_SHARED_OR_SKIP(path, GetParam());
  auto model = Model::load(path);
  const Tokenizer tok = Tokenizer::from_gguf(model->file());
  ops::ThreadPool pool(2);
  const int n_gen = 24;
  const auto convs = repeating_conversations(3, 3, model->hparams().n_vocab, 11);

  Engine plain(*model, tok, spec_options(*model, SpecMode::Off, 128, false), pool);
  const auto want = replay(plain, convs, n_gen);
  EXPECT_EQ(sum(want, &RequestStats::draft_tokens), 0);
  const bool rolls_back = !model->hparams().has_recurrent_layers();

  {
    Engine e(*model, tok, spec_options(*model, SpecMode::Ngram, 128, true), pool);
    const auto got = replay(e, convs, n_gen);
    expect_same(want, got, "ngram, memory hits");
    EXPECT_GT(sum(got, &RequestStats::cached_tokens), 0);
    if (rolls_back)
      EXPECT_GT(sum(got, &RequestStats::draft_tokens), 0);
    else
      EXPECT_EQ(sum(got, &RequestStats::draft_tokens), 0);  // off by itself
  }
  if (rolls_back) {  // 3 sequences in a pool that holds about one and a half: preemptions.
    // (Models with recurrent layers do not draft; their preemption is the cache tests'.)
    Engine e(*model, tok, spec_options(*model, SpecMode::Ngram, 6, true), pool);
    const auto got = replay(e, convs, n_gen);
    expect_same(want, got, "ngram, preemptions");
    EXPECT_GT(sum(got, &RequestStats::preemptions), 0);
  }
  const std::string dir = ::testing::TempDir() + "/hearth_spec_" + std::to_string(getpid()) + "_" +
                          std::filesystem::path(path).stem().string();
  std::filesystem::remove_all(dir);
  {  // The first half of the turns, then a restart that resumes from disk.
    std::vector<Conversation> first = convs;
    for (auto& c : first) c.user.resize(2);
    {
      Engine e(*model, tok, spec_options(*model, SpecMode::Ngram, 128, true, dir), pool);
      replay(e, first, n_gen);
    }
    Engine e(*model, tok, spec_options(*model, SpecMode::Ngram, 128, true, dir), pool);
    const auto got = replay(e, convs, n_gen);
    expect_same(want, got, "ngram, disk hits after a restart");
    if (rolls_back) {
      EXPECT_GT(got[0][0].stats.cached_tokens, 0);  // the first turn came back from disk
    }
  }
  std::filesystem::remove_all(dir);
}

// Sampled with a seed: the same tokens with and without drafts (the sampler draws its random
// numbers in the same order), under a chain with penalties and top-k.
TEST_P(SpecExact, SeededSamplingEqualsPlainDecoding) {
  HEARTH_SHARED_OR_SKIP(path, GetParam());
  auto model = Model::load(path);
  const Tokenizer tok = Tokenizer::from_gguf(model->file());
  ops::ThreadPool pool(2);
  const auto convs = repeating_conversations(1, 1, model->hparams().n_vocab, 5);
  auto sampled = [&](SpecMode mode, RequestStats* stats) {
    Engine e(*model, tok, spec_options(*model, mode, 64, true), pool);
    std::vector<int32_t> out;
    for (uint64_t seed : {1u, 2u, 3u}) {
      Turn t;
      GenerationRequest r = greedy(convs[0].user[0], 32, &t);
      SamplerParams p;
      p.temperature = 0.7f;
      p.top_k = 20;
      p.repeat_penalty = 1.1f;
      p.seed = seed;
      r.sampling = p;
      EXPECT_TRUE(e.submit(std::move(r)).ok());
      e.run_until_idle();
      out.insert(out.end(), t.tokens.begin(), t.tokens.end());
      stats->draft_tokens += t.stats.draft_tokens;
    }
    return out;
  };
  RequestStats off, on;
  EXPECT_EQ(sampled(SpecMode::Ngram, &on), sampled(SpecMode::Off, &off));
  EXPECT_EQ(off.draft_tokens, 0);
}

INSTANTIATE_TEST_SUITE_P(AllModels, SpecExact, ::testing::ValuesIn(model_files()),
                         [](const auto& info) { return test_name(info.param); });

// A reply cancelled part-way (its last step verified drafts beyond what it keeps) leaves the
// cache exact: the same prompt again gives the plain reply, reusing what was cached.
class SpecCancel : public ::testing::TestWithParam<SpecMode> {};

TEST_P(SpecCancel, CancelledReplyLeavesTheCacheExact) {
  HEARTH_SHARED_OR_SKIP(path, "models/stories260K.gguf");
  auto model = Model::load(path);
  const Tokenizer tok = Tokenizer::from_gguf(model->file());
  ops::ThreadPool pool(2);
  const std::vector<int32_t> prompt =
      tokenize_prompt(tok, {"Once upon a time, there was a little girl named Lily. She loved to "
                            "play. Once upon a time, there was a little girl named"});
  Engine plain(*model, tok, spec_options(*model, SpecMode::Off, 64, false), pool);
  const Turn want = run(plain, prompt, 96);

  EngineOptions o = spec_options(*model, GetParam(), 64, true);
  o.draft_model = model.get();  // --spec draft: the model drafts for itself
  Engine e(*model, tok, o, pool);
  Turn cut;
  const int64_t id = e.submit(greedy(prompt, 96, &cut)).id;
  while (cut.tokens.size() < 40 && e.step()) {
  }
  e.cancel(id);
  e.run_until_idle();
  EXPECT_EQ(cut.reason, FinishReason::Cancelled);
  ASSERT_GE(cut.tokens.size(), 40u);
  EXPECT_TRUE(std::equal(cut.tokens.begin(), cut.tokens.end(), want.tokens.begin()));
  const Turn again = run(e, prompt, 96);
  EXPECT_EQ(again.tokens, want.tokens);
  EXPECT_EQ(again.logit_hashes, want.logit_hashes);
  EXPECT_GT(again.stats.cached_tokens, 0);
  // And the continuation of the cut reply, whose path the cache holds, is exact too.
  std::vector<int32_t> cont = prompt;
  cont.insert(cont.end(), cut.tokens.begin(), cut.tokens.end());
  Turn cont_plain = run(plain, cont, 32);
  Turn cont_spec = run(e, cont, 32);
  EXPECT_EQ(cont_spec.tokens, cont_plain.tokens);
  EXPECT_GE(cont_spec.stats.cached_tokens, static_cast<int64_t>(prompt.size()));
}

// --spec draft: target and draft model pairs sharing the 512-token vocabulary (the synthetic
// models use stories260K's). A model drafting for itself proposes exactly what the target
// chooses (every draft accepted: the draft's one-token steps and the target's verification
// rows give bit-identical logits); a random draft proposes mostly misses. Either way the output
// is the plain one, with memory hits, preemption and disk hits after a restart.
class SpecDraftExact : public ::testing::TestWithParam<std::pair<std::string, std::string>> {};

TEST_P(SpecDraftExact, GreedyEqualsPlainDecoding) {
  const auto& [target_rel, draft_rel] = GetParam();
  HEARTH_SHARED_OR_SKIP(path, target_rel);
  HEARTH_SHARED_OR_SKIP(draft_path, draft_rel);
  auto model = Model::load(path);
  auto draft = Model::load(draft_path);
  const Tokenizer tok = Tokenizer::from_gguf(model->file());
  ops::ThreadPool pool(2);
  const int n_gen = 24;
  const auto convs = repeating_conversations(3, 3, model->hparams().n_vocab, 13);
  auto with_draft = [&](int32_t blocks, const std::string& dir = {}) {
    EngineOptions o = spec_options(*model, SpecMode::Draft, blocks, true, dir);
    o.draft_model = draft.get();
    return o;
  };
  Engine plain(*model, tok, spec_options(*model, SpecMode::Off, 128, false), pool);
  const auto want = replay(plain, convs, n_gen);
  if (model->hparams().has_recurrent_layers()) {  // the state cannot roll back: no drafts
    Engine e(*model, tok, with_draft(128), pool);
    const auto got = replay(e, convs, n_gen);
    expect_same(want, got, "draft asked for a recurrent model");
    EXPECT_EQ(sum(got, &RequestStats::draft_tokens), 0);
    return;
  }
  const bool itself = target_rel == draft_rel;
  {
    Engine e(*model, tok, with_draft(128), pool);
    const auto got = replay(e, convs, n_gen);
    expect_same(want, got, "draft, memory hits");
    const int64_t drafted = sum(got, &RequestStats::draft_tokens);
    const int64_t accepted = sum(got, &RequestStats::draft_accepted);
    EXPECT_GT(drafted, 0);
    if (itself) {
      EXPECT_EQ(accepted, drafted) << "a model drafting for itself is always right";
    }
    std::printf("%s drafting for %s: %lld drafted, %lld accepted\n", draft_rel.c_str(),
                target_rel.c_str(), static_cast<long long>(drafted),
                static_cast<long long>(accepted));
  }
  {
    Engine e(*model, tok, with_draft(6), pool);
    expect_same(want, replay(e, convs, n_gen), "draft, preemptions");
  }
  const std::string dir = ::testing::TempDir() + "/hearth_spec_draft_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  {
    std::vector<Conversation> first = convs;
    for (auto& c : first) c.user.resize(2);
    {
      Engine e(*model, tok, with_draft(128, dir), pool);
      replay(e, first, n_gen);
    }
    Engine e(*model, tok, with_draft(128, dir), pool);
    expect_same(want, replay(e, convs, n_gen), "draft, disk hits after a restart");
  }
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(
    Pairs, SpecDraftExact,
    ::testing::Values(
        std::pair<std::string, std::string>{"models/stories260K.gguf", "models/stories260K.gguf"},
        std::pair<std::string, std::string>{"models/stories260K.gguf",
                                            "models/synthetic/llama-untied-F32.gguf"},
        std::pair<std::string, std::string>{"models/synthetic/qwen3-Q8_0.gguf",
                                            "models/synthetic/qwen3-Q8_0.gguf"},
        std::pair<std::string, std::string>{"models/synthetic/qwen3-Q4_K.gguf",
                                            "models/stories260K.gguf"},
        std::pair<std::string, std::string>{"models/synthetic-arch/gemma3-Q8_0.gguf",
                                            "models/synthetic-arch/gemma3-Q8_0.gguf"},
        std::pair<std::string, std::string>{"models/synthetic-arch/qwen3moe-Q8_0.gguf",
                                            "models/synthetic/llama-tied-Q8_0.gguf"}));

// Every model file drafted for by stories260K (they share its vocabulary).
std::vector<std::pair<std::string, std::string>> drafted_by_stories() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& m : model_files()) out.emplace_back(m, "models/stories260K.gguf");
  return out;
}
INSTANTIATE_TEST_SUITE_P(AllModels, SpecDraftExact, ::testing::ValuesIn(drafted_by_stories()),
                         [](const auto& info) { return test_name(info.param.first); });

// Seeded sampling with a draft model: the same tokens as without (the draft's tokens are only
// kept when the sampler chose them).
TEST(SpecDraft, SeededSamplingEqualsPlainDecoding) {
  HEARTH_SHARED_OR_SKIP(path, "models/stories260K.gguf");
  auto model = Model::load(path);
  const Tokenizer tok = Tokenizer::from_gguf(model->file());
  ops::ThreadPool pool(2);
  const std::vector<int32_t> prompt = tokenize_prompt(tok, {"Once upon a time, there was a"});
  auto sampled = [&](SpecMode mode) {
    EngineOptions o = spec_options(*model, mode, 64, true);
    o.draft_model = model.get();
    Engine e(*model, tok, o, pool);
    std::vector<int32_t> out;
    for (uint64_t seed : {1u, 2u}) {
      Turn t;
      GenerationRequest r = greedy(prompt, 48, &t);
      SamplerParams p;
      p.temperature = 0.9f;
      p.seed = seed;
      r.sampling = p;
      EXPECT_TRUE(e.submit(std::move(r)).ok());
      e.run_until_idle();
      out.insert(out.end(), t.tokens.begin(), t.tokens.end());
      if (mode == SpecMode::Draft) {
        EXPECT_GT(t.stats.draft_tokens, 0);
      }
    }
    return out;
  };
  EXPECT_EQ(sampled(SpecMode::Draft), sampled(SpecMode::Off));
}

// A draft model must share the vocabulary and roll back: others are refused when the engine is
// made, saying why.
TEST(SpecDraft, RefusesAnotherVocabularyOrRecurrentLayers) {
  HEARTH_SHARED_OR_SKIP(path, "models/stories260K.gguf");
  HEARTH_SHARED_OR_SKIP(hybrid, "models/synthetic-arch/qwen35-F32.gguf");
  HEARTH_SHARED_OR_SKIP(vocab, "tokenizers/vocab-qwen3.gguf");
  auto model = Model::load(path);
  const Tokenizer tok = Tokenizer::from_gguf(model->file());
  ops::ThreadPool pool(2);
  auto refusal = [&](const Model& draft) -> std::string {
    EngineOptions o = spec_options(*model, SpecMode::Draft, 64, true);
    o.draft_model = &draft;
    try {
      Engine e(*model, tok, o, pool);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  auto recurrent = Model::load(hybrid);
  EXPECT_NE(refusal(*recurrent).find("recurrent"), std::string::npos) << refusal(*recurrent);
  SynthSpec spec = *synth_preset("tiny-qwen3");
  spec.vocab_path = vocab;
  const std::string other =
      ::testing::TempDir() + "/hearth_draft_vocab_" + std::to_string(getpid()) + ".gguf";
  write_synthetic_model(spec, other);
  auto qwen = Model::load(other);
  std::filesystem::remove(other);
  EXPECT_NE(refusal(*qwen).find("vocabulary"), std::string::npos) << refusal(*qwen);
  EngineOptions o = spec_options(*model, SpecMode::Draft, 64, true);
  EXPECT_THROW(Engine(*model, tok, o, pool), Error) << "draft mode without a draft model";
}

INSTANTIATE_TEST_SUITE_P(Modes, SpecCancel, ::testing::Values(SpecMode::Ngram, SpecMode::Draft),
                         [](const auto& info) { return std::string(spec_mode_name(info.param)); });

// On the real trained model, a story the prompt already tells is continued largely from drafts.
TEST(SpecCache, RealModelAcceptsDraftsOfRepeatedText) {
  HEARTH_SHARED_OR_SKIP(path, "models/stories260K.gguf");
  auto model = Model::load(path);
  const Tokenizer tok = Tokenizer::from_gguf(model->file());
  ops::ThreadPool pool(2);
  const std::vector<int32_t> prompt =
      tokenize_prompt(tok, {"Once upon a time, there was a little girl named Lily. She loved to "
                            "play outside in the park. One day, she saw a big red ball. Once "
                            "upon a time, there was a little girl named Lily. She loved to"});
  Engine e(*model, tok, spec_options(*model, SpecMode::Ngram, 64, true), pool);
  const Turn t = run(e, prompt, 128);
  EXPECT_GT(t.stats.draft_accepted, 0);
  EXPECT_LE(t.stats.draft_accepted, t.stats.draft_tokens);
  EXPECT_EQ(static_cast<int64_t>(t.tokens.size()), 128);
}

}  // namespace
}  // namespace hearth
