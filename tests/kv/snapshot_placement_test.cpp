// The snapshot placement policy, measured (kv/kv_manager.h): a chat replay — S sessions x T
// turns sharing a system prompt, each turn the whole history plus a new message, replies fed
// back — driven through the KV manager as the engine drives it, with a stand-in recurrence
// (kv/fake_recurrence.h) on real model shapes under the engine's default budgets. Every turn
// must prefill only its new message (prefilled / new <= 1.02) and restore the exact state; the
// snapshot memory per 1,000 cached tokens is reported.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>

#include "kv/fake_recurrence.h"
#include "kv/kv_manager.h"

namespace hearth {
namespace {

// A hybrid of `n_layer` layers, every fourth full attention, the rest Gated DeltaNet.
HParams deltanet_hybrid(int64_t n_layer, int64_t n_embd, int64_t n_head_kv, int64_t head_dim,
                        int64_t ssm_heads, int64_t ssm_head_dim) {
  HParams hp;
  hp.arch = Arch::Qwen35;
  hp.n_layer = n_layer;
  hp.n_embd = n_embd;
  hp.n_head = 2 * n_head_kv;
  hp.n_head_kv = n_head_kv;
  hp.head_dim = head_dim;
  hp.ssm_conv_kernel = 4;
  hp.ssm_head_dim = ssm_head_dim;
  hp.ssm_n_k_heads = ssm_heads;
  hp.ssm_n_v_heads = ssm_heads;
  int32_t kv = 0;
  for (int64_t l = 0; l < n_layer; ++l) {
    const bool attention = l % 4 == 3;
    hp.layer_kinds.push_back(attention ? LayerKind::Attention : LayerKind::DeltaNet);
    hp.kv_index.push_back(attention ? kv++ : -1);
  }
  return hp;
}

struct ReplayResult {
  int64_t prefilled = 0, new_tokens = 0;
  size_t snapshot_bytes = 0;
  int64_t cached_tokens = 0;  // resident in the cache at the end
  double per_1000() const { return 1000.0 * static_cast<double>(snapshot_bytes) / cached_tokens; }
};

// As the engine with EngineOptions' defaults (8 running, 4096-token contexts, F16 KV in blocks
// of 32, the default snapshot budget and interval).
ReplayResult replay(const HParams& hp, int sessions, int turns) {
  const KvGeometry g = KvGeometry::for_model(hp, TensorType::F16, 32);
  KvCacheOptions o;
  o.max_sequences = 2 * 8;
  KvManager kv(g, g.default_budget(4096, 8), o);
  std::mt19937 rng(11);
  std::uniform_int_distribution<int32_t> tok(3, 30000);
  std::vector<int32_t> system(300);
  for (int32_t& t : system) t = tok(rng);
  std::vector<std::vector<int32_t>> hist(static_cast<size_t>(sessions), system);
  ReplayResult r;
  int64_t id = 0;
  for (int t = 0; t < turns; ++t)
    for (auto& h : hist) {
      const int n_new = std::uniform_int_distribution<int>(20, 80)(rng);
      for (int i = 0; i < n_new; ++i) h.push_back(tok(rng));
      r.new_tokens += t == 0 ? static_cast<int64_t>(h.size()) : n_new;
      ++id;
      const int64_t cached = kv.attach(id, h, 4095);
      EXPECT_EQ(test::fake_state_of(kv, id),
                test::state_after(std::span(h).first(static_cast<size_t>(cached))));
      r.prefilled += static_cast<int64_t>(h.size()) - cached;
      test::compute(kv, id, h, cached, static_cast<int64_t>(h.size()));
      // A 64-token reply: each sampled token computed by the next decode row; the last one
      // by the completing row after finish_turn.
      for (int i = 0; i < 64; ++i) {
        h.push_back(tok(rng));
        if (i < 63)
          test::compute(kv, id, h, static_cast<int64_t>(h.size()) - 1,
                        static_cast<int64_t>(h.size()));
      }
      const auto n = static_cast<int64_t>(h.size());
      EXPECT_TRUE(kv.finish_turn({id, h, n - 1, {}}));
      EXPECT_TRUE(kv.allocate_slots(id, n - 1, 1));
      test::advance(kv.arena().state.slot(kv.state_slot(id)), h.back());
      kv.cache_finished({id, h, n, {}});
    }
  const PrefixCacheStats st = *kv.cache_stats();
  r.snapshot_bytes = static_cast<size_t>(st.snapshots) * kv.states().slot_bytes();
  r.cached_tokens = st.resident_blocks * g.block_tokens();
  std::printf(
      "  %d x %d turns: prefilled/new %lld/%lld = %.3f; slot %.2f MB, KV %zu B/token; %lld "
      "snapshots held (%lld taken, %lld evicted) = %.1f MB for %lld cached tokens: %.2f MB per "
      "1,000 tokens; interval now %lld\n",
      sessions, turns, static_cast<long long>(r.prefilled), static_cast<long long>(r.new_tokens),
      static_cast<double>(r.prefilled) / static_cast<double>(r.new_tokens),
      static_cast<double>(kv.states().slot_bytes()) / 1e6, g.bytes_per_token(),
      static_cast<long long>(st.snapshots), static_cast<long long>(st.snapshots_inserted),
      static_cast<long long>(st.snapshot_evictions), static_cast<double>(r.snapshot_bytes) / 1e6,
      static_cast<long long>(r.cached_tokens), r.per_1000() / 1e6,
      static_cast<long long>(kv.snapshot_interval()));
  return r;
}

// Qwen3.5-0.8B's shape (24 layers, 18 DeltaNet with 16 heads of 128, 6 attention layers with 2
// KV heads of 256): about 19 MB of state per snapshot against 12 KiB of KV per token.
TEST(SnapshotPlacement, Qwen35SizedChatReplayPrefillsOnlyNewTokens) {
  const HParams hp = deltanet_hybrid(24, 1024, 2, 256, 16, 128);
  for (auto [s, t] : {std::pair{4, 8}, std::pair{1, 8}}) {
    const ReplayResult r = replay(hp, s, t);
    EXPECT_LE(static_cast<double>(r.prefilled), 1.02 * static_cast<double>(r.new_tokens));
  }
}

// The synthetic qwen35 file's shape (3 DeltaNet layers of 4 x 64, one attention layer).
TEST(SnapshotPlacement, TinyHybridChatReplayPrefillsOnlyNewTokens) {
  HParams hp = deltanet_hybrid(4, 256, 2, 64, 2, 64);
  hp.ssm_n_v_heads = 4;
  for (auto [s, t] : {std::pair{4, 8}, std::pair{1, 8}}) {
    const ReplayResult r = replay(hp, s, t);
    EXPECT_LE(static_cast<double>(r.prefilled), 1.02 * static_cast<double>(r.new_tokens));
  }
}

}  // namespace
}  // namespace hearth
