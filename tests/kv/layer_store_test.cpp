// The contract between the prefix cache's tree and a store of another layer kind
// (kv/layer_store.h): a new kind plugs in as one class, and the tree calls it where it would
// have branched on the kind: a match is cut back to where the store's state covers it (counted
// as cut tokens), a superseded partial leaf passes its state on, a node that leaves the tree or
// loses its block to disk tells the store, and the store is flushed at shutdown.
#include "kv/layer_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "kv/disk_tier.h"
#include "kv/kv_test_util.h"
#include "kv/prefix_cache.h"
#include "kv/prefix_cache_node.h"

namespace hearth {
namespace {

using test::iota_tokens;

// A made-up kind whose state exists only at the ends of inserted paths: it keeps, per node,
// how many of its tokens its state covers, and lets a match end only at such a point.
struct EndsStore final : LayerStore {
  std::map<const CacheNode*, int64_t> ends;
  std::set<const CacheNode*> evicted;
  int n_removed = 0, n_passed = 0;
  int* flushes = nullptr;  // outlives the store, which the cache owns

  bool covers(const CachePath&, const PathStep& last, int64_t end) const override {
    if (end == 0) return true;
    auto it = ends.find(last.node);
    return it != ends.end() && it->second == last.used;
  }
  void pass_on(CacheNode& from, CacheNode& to) override {
    auto it = ends.find(&from);
    if (it == ends.end()) return;
    ends[&to] = it->second;
    ends.erase(&from);
    ++n_passed;
  }
  void block_evicted(CacheNode& n) override { evicted.insert(&n); }
  void removed(CacheNode& n) override {
    ends.erase(&n);
    ++n_removed;
  }
  void flush() override {
    if (flushes) ++*flushes;
  }
  void add_stats(PrefixCacheStats& s) const override {
    s.window_blocks = static_cast<int64_t>(ends.size());
  }
};

struct Cache {
  BlockPool pool;
  EndsStore* store;
  std::unique_ptr<PrefixCache> cache;
  explicit Cache(DiskTier* disk = nullptr, int32_t n_blocks = 16)
      : pool(test::small_f16_geometry(4, 1).layout, 1, n_blocks) {
    auto s = std::make_unique<EndsStore>();
    store = s.get();
    std::vector<std::unique_ptr<LayerStore>> stores;
    stores.push_back(std::move(s));
    cache = std::make_unique<PrefixCache>(pool, disk, std::move(stores));
  }
  // Caches `tokens` in fresh blocks; the store's state covers the path's end.
  void insert(const std::vector<int32_t>& tokens) {
    std::vector<int32_t> blocks;
    for (size_t i = 0; i < tokens.size(); i += 4) {
      auto b = pool.allocate();
      while (!b && cache->evict_one()) b = pool.allocate();
      blocks.push_back(*b);
    }
    const std::vector<CacheNode*> nodes = cache->insert(tokens, blocks);
    ASSERT_FALSE(nodes.empty());
    store->ends[nodes.back()] = static_cast<int64_t>(nodes.back()->tokens.size());
  }
  void release(PrefixMatch& m) {
    for (int32_t b : m.blocks) pool.release(b);
  }
};

TEST(LayerStore, AMatchIsCutBackToWhereTheStoreCovers) {
  Cache c;
  const auto path = iota_tokens(10);
  c.insert(std::vector<int32_t>(path.begin(), path.begin() + 6));  // state at 6
  c.insert(path);                                                  // and at 10
  EXPECT_EQ(c.cache->stats().window_blocks, 2);
  auto ask = iota_tokens(9);  // 9 cached tokens: cut back to 6
  ask.push_back(7);
  PrefixMatch m = c.cache->match(ask, 10);
  EXPECT_EQ(m.n_tokens(), 6);
  EXPECT_EQ(c.cache->stats().cut_tokens, 3);
  c.release(m);
  m = c.cache->match(path, 10);  // all of it
  EXPECT_EQ(m.n_tokens(), 10);
  EXPECT_EQ(c.cache->stats().cut_tokens, 3);
  c.release(m);
}

TEST(LayerStore, ASupersededLeafPassesItsStateOnAndRemovalsAreTold) {
  Cache c;
  const auto path = iota_tokens(7);
  c.insert(std::vector<int32_t>(path.begin(), path.begin() + 6));  // a partial leaf of 2 tokens
  std::vector<int32_t> blocks = {*c.pool.allocate(), *c.pool.allocate()};
  const std::vector<CacheNode*> nodes = c.cache->insert(path, blocks);  // supersedes it
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[1]->tokens.size(), 3u);
  EXPECT_EQ(c.store->n_passed, 1);
  EXPECT_EQ(c.store->n_removed, 1);
  ASSERT_EQ(c.store->ends.size(), 1u);
  EXPECT_EQ(c.store->ends.at(nodes[1]), 2);  // valid for the 2 tokens the old leaf had
  // Without a disk tier, evicting removes nodes, and the store hears of each.
  while (c.cache->evict_one()) {
  }
  EXPECT_EQ(c.store->n_removed, 3);
  EXPECT_TRUE(c.store->ends.empty());
  EXPECT_TRUE(c.store->evicted.empty());
}

TEST(LayerStore, ABlockEvictedToDiskIsToldAndTheStoreFlushesAtShutdown) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("hearth-layer-store-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  {
    BlockPool probe(test::small_f16_geometry(4, 1).layout, 1, 1);
    DiskTier disk(dir.string(), "m", probe.arena().block_stride(), 1ull << 30);
    Cache c(&disk);
    c.insert(iota_tokens(8));
    ASSERT_TRUE(c.cache->evict_one());  // the leaf goes to disk, stays in the tree
    EXPECT_EQ(c.store->evicted.size(), 1u);
    EXPECT_EQ(c.store->n_removed, 0);
    int flushes = 0;
    c.store->flushes = &flushes;
    c.cache->flush_to_disk();
    EXPECT_EQ(flushes, 1);
    c.cache.reset();  // shutdown
    EXPECT_EQ(flushes, 2);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace hearth
