// Sliding-window layers in the KV manager (kv/kv_manager.h, "Sliding windows"): a sequence
// releases each window block once no later query sees it and holds a bounded number; the prefix
// cache keeps the window blocks of the prompt's and reply's tails and cuts a match back to the
// largest position whose window they cover; nothing leaks from either pool.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <numeric>

#include "kv/disk_tier.h"
#include "kv/kv_manager.h"
#include "kv/kv_test_util.h"
#include "kv/prefix_cache.h"
#include "kv/window_store.h"

namespace hearth {
namespace {

constexpr int64_t kB = 4, kWindow = 10;

KvGeometry geometry() {
  KvGeometry g = test::small_f16_geometry(kB, 1);
  g.n_window_layer = 3;
  g.n_swa = kWindow;
  return g;
}

KvCacheOptions cache_on(bool on = true) {
  KvCacheOptions c;
  c.prefix_cache = on;
  c.max_sequences = 2;
  c.step_tokens = 8;
  return c;
}

using test::iota_tokens;

size_t big_budget(const KvGeometry& g) {
  return (g.bytes_per_block() + g.window_bytes_per_block()) * 200;
}

// The window table after a step from n_computed: -1 exactly for the blocks wholly before the
// first new token's window, a block everywhere after; returns the blocks held.
int64_t check_window_table(std::span<const int32_t> w, int64_t n_computed, int64_t n_new) {
  EXPECT_EQ(static_cast<int64_t>(w.size()), (n_computed + n_new + kB - 1) / kB);
  const int64_t first_seen = std::max<int64_t>(0, n_computed - kWindow + 1);
  int64_t held = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    const bool dead = static_cast<int64_t>(i + 1) * kB <= first_seen;
    EXPECT_EQ(w[i] < 0, dead) << "block " << i << " at n_computed " << n_computed;
    held += w[i] >= 0;
  }
  return held;
}

void expect_all_returned(const KvManager& kv) {
  EXPECT_EQ(kv.pool().n_free() + kv.cache_only_blocks(), kv.n_blocks());
  ASSERT_NE(kv.window_pool(), nullptr);
  EXPECT_EQ(kv.window_pool()->n_free() + kv.cache_only_window_blocks(),
            kv.window_pool()->n_blocks());
}

TEST(WindowKv, TheGeometrySplitsTheBudgetByTheRule) {
  const KvGeometry g = geometry();
  // Wanted: 2 * (2 sequences * (ceil(10/4) + 2) + ceil(8/4)) = 24 window blocks.
  EXPECT_EQ(g.window_blocks_wanted(2, 8), 24);
  KvManager kv(g, big_budget(g), cache_on());
  EXPECT_EQ(kv.window_pool()->n_blocks(), 24);
  EXPECT_EQ(kv.n_blocks(), static_cast<int32_t>((big_budget(g) - 24 * g.window_bytes_per_block()) /
                                                g.bytes_per_block()));
  EXPECT_EQ(kv.arena().window.n_layer, 3);
  EXPECT_EQ(kv.arena().n_layer, 1);
  EXPECT_EQ(kv.window_bytes_per_token(), 3 * kv.bytes_per_token());
  // A small budget: the proportional share (as many blocks as the main pool).
  const KvGeometry::Split s =
      g.split((g.bytes_per_block() + g.window_bytes_per_block()) * 10, 2, 8);
  EXPECT_EQ(s.window_blocks, 10);
  EXPECT_EQ(s.main_blocks, 10);
  // No windows: one pool, as before.
  KvGeometry plain = g;
  plain.n_window_layer = 0;
  KvManager one(plain, plain.bytes_per_block() * 7, cache_on());
  EXPECT_EQ(one.window_pool(), nullptr);
  EXPECT_EQ(one.n_blocks(), 7);
  EXPECT_TRUE(one.window_table(1).empty());
}

// Prefill in chunks of 6, then 100 decode steps: blocks before the window are released as it
// slides, and a sequence never holds more than the rule's bound.
TEST(WindowKv, ASequenceReleasesWhatSlidOutAndStaysBounded) {
  const KvGeometry g = geometry();
  KvManager kv(g, big_budget(g), cache_on(false));
  int64_t n = 0;
  for (; n < 30; n += 6) {
    ASSERT_TRUE(kv.allocate_slots(1, n, 6));
    const int64_t held = check_window_table(kv.window_table(1), n, 6);
    EXPECT_LE(held, (kWindow + 6 - 1 + kB - 1) / kB + 1);
  }
  int64_t most = 0;
  for (; n < 130; ++n) {
    ASSERT_TRUE(kv.allocate_slots(1, n, 1));
    most = std::max(most, check_window_table(kv.window_table(1), n, 1));
  }
  EXPECT_EQ(most, g.window_blocks_per_sequence());  // ceil(10/4) + 1 = 4, reached
  EXPECT_EQ(static_cast<int64_t>(kv.block_table(1).size()), (130 + kB - 1) / kB);
  kv.free(1);
  expect_all_returned(kv);
  EXPECT_EQ(kv.window_pool()->n_free(), kv.window_pool()->n_blocks());
}

// A prompt of 30 prefilled in chunks of 8 (its path cached when computed, holding window blocks
// 3..7: blocks 0-2 slid out before the last chunk at 24), then 20 decoded tokens (cached at the
// end, holding blocks 10-12). Each later request's match is cut back to the largest p whose
// window [p-9, p) is cached.
TEST(WindowKv, AMatchIsCutBackToACoveredWindow) {
  const KvGeometry g = geometry();
  KvManager kv(g, big_budget(g), cache_on());
  std::vector<int32_t> a = iota_tokens(30);
  EXPECT_EQ(kv.attach(1, a, 29), 0);
  for (int64_t n = 0; n < 30; n += 8) {
    ASSERT_TRUE(kv.allocate_slots(1, n, std::min<int64_t>(8, 30 - n)));
    kv.computed({1, a, std::min<int64_t>(n + 8, 30), {}});
  }
  for (int64_t n = 30; n < 50; ++n) {
    a.push_back(static_cast<int32_t>(900 + n));
    ASSERT_TRUE(kv.allocate_slots(1, n, 1));
    kv.computed({1, a, n + 1, {}});
  }
  kv.cache_finished({1, a, 50, {}});
  expect_all_returned(kv);

  struct Case {
    const char* what;
    std::vector<int32_t> tokens;
    int64_t want;
  };
  auto edit_at = [&](size_t at) {
    std::vector<int32_t> t(a.begin(), a.begin() + static_cast<ptrdiff_t>(at));
    for (int i = 0; i < 6; ++i) t.push_back(7 + i);
    return t;
  };
  std::vector<int32_t> cont = a;
  for (int i = 0; i < 5; ++i) cont.push_back(5 + i);
  const std::vector<Case> cases = {
      {"continuation", cont, 50},
      {"repeat of the prompt", std::vector<int32_t>(a.begin(), a.begin() + 30), 29},
      {"edit at the last chunk's start", edit_at(24), 24},
      {"edit inside block 3", edit_at(21), 21},
      {"edit before the cached windows", edit_at(20), 0},
      {"edit at 12", edit_at(12), 0},
      {"edit in the reply's tail", edit_at(49), 49},
      // [36, 45) reaches block 9, which slid out: back to the prompt's end (block 7 keeps the
      // window block of its first 2 tokens, passed on when the reply's full block replaced it).
      {"edit in the reply before its tail", edit_at(45), 30},
  };
  int64_t id = 10;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    ++id;
    const int64_t got = kv.attach(id, c.tokens, static_cast<int64_t>(c.tokens.size()) - 1);
    EXPECT_EQ(got, c.want);
    check_window_table(kv.window_table(id), got, 0);
    // The sequence goes on from there: its window is complete, its next block writable.
    ASSERT_TRUE(kv.allocate_slots(id, got, 1));
    const auto w = kv.window_table(id);
    if (got % kB != 0) {
      EXPECT_EQ(kv.window_pool()->refcount(w[static_cast<size_t>(got / kB)]), 1);
    }
    kv.free(id);
  }
  expect_all_returned(kv);
  EXPECT_GT(kv.cache_stats()->cut_tokens, 0);
  EXPECT_EQ(kv.cache_stats()->window_blocks, 8);  // 3..7 of the prompt, 10..12 of the reply
}

// A window pool too small for every cached tail: cached window blocks go LRU, and a match whose
// window went is cut back rather than read from a freed block.
TEST(WindowKv, WindowBlocksAreEvictedOnTheirOwnPressure) {
  const KvGeometry g = geometry();
  KvManager kv(g, big_budget(g), cache_on());
  ASSERT_EQ(kv.window_pool()->n_blocks(), 24);
  std::vector<std::vector<int32_t>> seqs;
  for (int s = 0; s < 9; ++s) {  // 27 window blocks cached into 24
    seqs.push_back(iota_tokens(12, 1000 * (s + 1)));
    const int64_t id = s + 1;
    EXPECT_EQ(kv.attach(id, seqs.back(), 11), 0);
    ASSERT_TRUE(kv.allocate_slots(id, 0, 12));
    kv.cache_finished({id, seqs.back(), 12, {}});
  }
  EXPECT_GT(kv.cache_stats()->window_evictions, 0);
  EXPECT_EQ(kv.cache_stats()->window_evictions, 3);
  EXPECT_EQ(kv.cache_stats()->window_blocks, 24);
  // The oldest sequence lost its window blocks: no usable match. The newest kept them.
  std::vector<int32_t> old = seqs[0], recent = seqs[8];
  old.push_back(1);
  recent.push_back(1);
  EXPECT_EQ(kv.attach(20, old, 12), 0);
  EXPECT_EQ(kv.attach(21, recent, 12), 12);
  kv.free(20);
  kv.free(21);
  expect_all_returned(kv);
}

// The window blocks' disk tier (through the prefix cache, with disk tiers it can flush): evicted
// window blocks come back from disk on a hit; a file that cannot be read back gives the match
// up (recomputed from 0, never a wrong window); a restart finds the window blocks written at
// shutdown.
TEST(WindowKv, EvictedWindowBlocksComeBackFromDisk) {
  const KvGeometry g = geometry();
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("hearth-window-disk-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  BlockPool main(g.layout, g.n_layer, 32), window(g.layout, g.n_window_layer, 6);
  DiskTier disk(dir.string(), "blocks", main.arena().block_stride(), 1ull << 30);
  DiskTier window_disk(dir.string(), "windows", window.arena().block_stride(), 1ull << 30);
  const auto a = iota_tokens(12, 1000), b = iota_tokens(12, 2000), c = iota_tokens(12, 3000);
  auto ask = [](std::vector<int32_t> t) {
    t.push_back(1);
    return t;
  };
  // The cache with its window store (which it owns), as the KV manager builds it.
  struct Cache {
    WindowStore* windows;
    PrefixCache cache;
    Cache(BlockPool& main, DiskTier& disk, std::unique_ptr<WindowStore> store)
        : windows(store.get()), cache(main, &disk, stores(std::move(store))) {}
    static std::vector<std::unique_ptr<LayerStore>> stores(std::unique_ptr<WindowStore> s) {
      std::vector<std::unique_ptr<LayerStore>> v;
      v.push_back(std::move(s));
      return v;
    }
  };
  auto open = [&] {
    return std::make_unique<Cache>(main, disk,
                                   std::make_unique<WindowStore>(window, kWindow, &window_disk));
  };
  auto insert = [&](Cache& c, const std::vector<int32_t>& t) {
    std::vector<int32_t> blocks, windows;
    for (int i = 0; i < 3; ++i) {
      blocks.push_back(*main.allocate());
      auto w = window.allocate();
      while (!w && c.windows->evict_one()) w = window.allocate();
      windows.push_back(*w);
    }
    c.windows->adopt(c.cache.insert(t, blocks), windows);
  };
  auto release = [&](PrefixMatch& m) {
    for (int32_t x : m.blocks) main.release(x);
    for (int32_t x : m.window_blocks)
      if (x >= 0) window.release(x);
  };
  {
    const std::unique_ptr<Cache> opened = open();
    PrefixCache& cache = opened->cache;
    insert(*opened, a);
    insert(*opened, b);  // the window pool is full
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(opened->windows->evict_one());  // a's go to disk
    EXPECT_EQ(cache.stats().window_blocks, 3);
    PrefixMatch m = cache.match(ask(a), 12);  // read back
    EXPECT_EQ(m.n_tokens(), 12);
    EXPECT_EQ(m.window_blocks.size(), 3u);
    for (int32_t w : m.window_blocks) EXPECT_GE(w, 0);
    release(m);
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(opened->windows->evict_one());  // b's, used longest ago
    window_disk.flush();
    int corrupted = 0;
    for (const auto& f : std::filesystem::recursive_directory_iterator(dir))
      if (f.is_regular_file() && f.path().parent_path().filename() == "windows") {
        std::ofstream(f.path(), std::ios::binary | std::ios::trunc) << "x";
        ++corrupted;
      }
    EXPECT_EQ(corrupted, 6);
    m = cache.match(ask(b), 12);  // b's window blocks are only on disk, and unreadable
    EXPECT_EQ(m.n_tokens(), 0);
    EXPECT_TRUE(m.blocks.empty());
    m = cache.match(ask(a), 12);  // a's are in memory
    EXPECT_EQ(m.n_tokens(), 12);
    release(m);
    insert(*opened, c);  // written at shutdown
  }
  EXPECT_EQ(window.n_free(), window.n_blocks());
  EXPECT_EQ(main.n_free(), main.n_blocks());
  const std::unique_ptr<Cache> reopened = open();
  PrefixCache& restarted = reopened->cache;
  PrefixMatch m = restarted.match(ask(c), 12);
  EXPECT_EQ(m.n_tokens(), 12);
  EXPECT_EQ(m.window_blocks.size(), 3u);
  release(m);
  EXPECT_EQ(restarted.match(ask(a), 12).n_tokens(), 0);  // its files were corrupted
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace hearth
