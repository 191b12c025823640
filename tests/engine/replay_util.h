// Shared helpers for the engine's cache tests: greedy requests that record ids, logit hashes and
// stats; multi-turn conversations replayed with sessions interleaved; comparisons of two replays.
#pragma once

#include <gtest/gtest.h>
#include <xxhash.h>

#include <random>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "model/forward.h"

namespace hearth::test {

struct Turn {
  std::vector<int32_t> tokens;         // generated
  std::vector<uint64_t> logit_hashes;  // per generated token, of the raw float bytes
  RequestStats stats;
  FinishReason reason = FinishReason::Stop;
  std::string error;
};

inline GenerationRequest greedy(const std::vector<int32_t>& prompt, int n_gen, Turn* out) {
  GenerationRequest r;
  r.prompt = prompt;
  r.max_tokens = n_gen;
  r.stop_at_eog = false;
  r.on_event = [out](const EngineEvent& e) {
    if (e.kind == EngineEvent::Kind::Token) out->tokens.push_back(e.token);
    if (e.kind != EngineEvent::Kind::Finished) return;
    out->stats = e.stats;
    out->reason = e.reason;
    out->error = e.error;
  };
  r.on_logits = [out](std::span<const float> l) {
    out->logit_hashes.push_back(XXH3_64bits(l.data(), l.size_bytes()));
  };
  return r;
}

// Submits one request and runs the engine until it is done.
inline Turn run(Engine& e, const std::vector<int32_t>& prompt, int n_gen) {
  Turn t;
  EXPECT_TRUE(e.submit(greedy(prompt, n_gen, &t)).ok());
  e.run_until_idle();
  return t;
}

// Sets the KV budget to `blocks` blocks of every KV layer of the model, in the options' KV type
// and block size.
inline void set_kv_blocks(EngineOptions& o, const Model& m, int32_t blocks) {
  o.kv_bytes = static_cast<size_t>(blocks) * 2 *
               kv_layout_for(m.hparams(), o.kv_type, o.kv_block_tokens).block_bytes() *
               static_cast<size_t>(m.hparams().n_kv_layers());
}

// F32 KV of `blocks` blocks, chunks of 48, sequences up to 512 tokens.
inline EngineOptions cache_test_options(const Model& m, int32_t blocks, bool cache,
                                        int max_running = 4) {
  EngineOptions o;
  o.kv_type = TensorType::F32;
  o.max_running = max_running;
  o.step_tokens = 48;
  o.max_seq_tokens = 512;
  o.prefix_cache = cache;
  set_kv_blocks(o, m, blocks);
  return o;
}

struct Conversation {
  std::vector<std::vector<int32_t>> user;  // new tokens per turn (the first holds the system)
};

// Sessions sharing a 38-token "system prompt", each turn adding 1-30 random tokens; drawn turn by
// turn across the sessions.
inline std::vector<Conversation> interleaved_conversations(int sessions, int turns, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> tok(3, 511);
  std::vector<int32_t> system = {1};
  for (int i = 0; i < 37; ++i) system.push_back(tok(rng));
  std::vector<Conversation> out(static_cast<size_t>(sessions));
  for (int t = 0; t < turns; ++t)
    for (auto& c : out) {
      std::vector<int32_t> u = t == 0 ? system : std::vector<int32_t>{};
      const int n = std::uniform_int_distribution<int>(1, 30)(rng);
      for (int i = 0; i < n; ++i) u.push_back(tok(rng));
      c.user.push_back(std::move(u));
    }
  return out;
}

// Runs every conversation turn by turn, sessions interleaved (each turn of all sessions
// submitted together), feeding generated tokens back into the history; `histories` (if given)
// ends as each session's whole history.
inline std::vector<std::vector<Turn>> replay(
    Engine& engine, const std::vector<Conversation>& convs, int n_gen,
    std::vector<std::vector<int32_t>>* histories = nullptr) {
  const size_t S = convs.size();
  const size_t T = convs[0].user.size();
  std::vector<std::vector<Turn>> out(S, std::vector<Turn>(T));
  std::vector<std::vector<int32_t>> hist(S);
  for (size_t t = 0; t < T; ++t) {
    for (size_t s = 0; s < S; ++s) {
      hist[s].insert(hist[s].end(), convs[s].user[t].begin(), convs[s].user[t].end());
      EXPECT_TRUE(engine.submit(greedy(hist[s], n_gen, &out[s][t])).ok());
    }
    engine.run_until_idle();
    for (size_t s = 0; s < S; ++s) {
      EXPECT_NE(out[s][t].reason, FinishReason::Error) << out[s][t].error;
      hist[s].insert(hist[s].end(), out[s][t].tokens.begin(), out[s][t].tokens.end());
    }
  }
  if (histories) *histories = std::move(hist);
  return out;
}

inline void expect_same(const std::vector<std::vector<Turn>>& want,
                        const std::vector<std::vector<Turn>>& got, const char* what) {
  for (size_t s = 0; s < want.size(); ++s)
    for (size_t t = 0; t < want[s].size(); ++t) {
      EXPECT_EQ(got[s][t].tokens, want[s][t].tokens)
          << what << " session " << s << " turn " << t << " ("
          << finish_reason_name(got[s][t].reason) << ": " << got[s][t].error << ")";
      EXPECT_EQ(got[s][t].logit_hashes, want[s][t].logit_hashes)
          << what << " session " << s << " turn " << t << ": logits differ";
    }
}

// Prefilled and prompt tokens of every turn after the first, summed over the sessions.
inline std::pair<int64_t, int64_t> later_turns_prefilled_of_prompt(
    const std::vector<std::vector<Turn>>& r) {
  int64_t prefilled = 0, prompt = 0;
  for (const auto& s : r)
    for (size_t t = 1; t < s.size(); ++t) {
      prefilled += s[t].stats.prefilled_tokens;
      prompt += s[t].stats.prompt_tokens;
    }
  return {prefilled, prompt};
}

}  // namespace hearth::test
