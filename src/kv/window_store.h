// Window blocks of the prefix cache (kv/prefix_cache.h), for models with sliding-window layers
// (gemma3): the cached K/V of those layers, which lives in a pool of its own (KvArena::window).
//
// A running sequence frees its window blocks once they slide out of its window
// (kv/kv_manager.h), so a cached path holds window blocks only where a sequence still held them
// when it was cached: at the tail of each cached prompt and reply. A node may hold one window
// block (the same positions as its block). A match ending at p is usable only if every window
// block that positions [p - n_swa + 1, p) fall in is on the path (p = 0 always is): the match is
// cut back to the largest such p (composed with the snapshot cut-back on a model with both), and
// the caller gets those window blocks (shared, or copied where it will write next) and -1 for
// the blocks before its window. Window blocks are evicted on their own pool's pressure,
// least-recently-used first (evict_one); a node that loses its block (evicted to disk, or
// removed) loses its window block too. With a disk tier for window blocks (beside the blocks'),
// a window block holding all of its node's tokens is written out when it is evicted (or its
// node's block is), stays in the tree as on disk and counts as cached (read back on a hit), is
// written at shutdown and found again on restart; one that cannot be read back is dropped and
// the match given up (recomputed).
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "kv/layer_store.h"

namespace hearth {

class BlockPool;
class DiskTier;

class WindowStore final : public LayerStore {
 public:
  // `window`: the window blocks (of the tree's block size), for a window of `n_swa` tokens;
  // `disk`: their disk tier, beside the blocks'; null: none.
  WindowStore(BlockPool& window, int64_t n_swa, DiskTier* disk);
  ~WindowStore() override;

  // After PrefixCache::insert: takes over the references of a sequence's window table (entries
  // >= 0), entry i for the block at `nodes[i]` (holding all of its tokens); the entries past
  // `nodes` (blocks the tree did not keep) are released.
  void adopt(const std::vector<CacheNode*>& nodes, std::span<const int32_t> window);
  // Frees one window block: the least-recently-used one only the cache holds; false when none.
  bool evict_one();
  // Window blocks referenced only by the cache.
  int64_t reclaimable() const;

  void bind(const PrefixCache& tree) override;
  void adopt_disk() override;
  bool covers(const CachePath& path, const PathStep& last, int64_t end) const override;
  bool take(const CachePath& path, PrefixMatch& m) override;
  void give_back(PrefixMatch& m) override;
  void pass_on(CacheNode& from, CacheNode& to) override;
  void block_evicted(CacheNode& n) override;
  void removed(CacheNode& n) override;
  void flush() override;
  void add_stats(PrefixCacheStats& s) const override;

 private:
  struct Entry {
    int32_t block = -1;    // the node's positions' window block (-1: none in memory)
    int64_t used = 0;      // holding the K/V of the node's first `used` tokens
    bool on_disk = false;  // a window block of all its tokens is on the disk tier
    bool covers(int64_t needed) const { return (block >= 0 && used >= needed) || on_disk; }
  };
  void adopt(const CacheNode& n, int32_t block, int64_t used);
  int32_t share_or_copy(const CacheNode& n, int64_t used);
  void drop(const CacheNode& n);
  void evict(const CacheNode& n);
  bool load(const CacheNode& n);
  void write(const CacheNode& n, Entry& e);
  void trim_disk();

  BlockPool& window_;
  int64_t n_swa_;
  DiskTier* disk_;
  std::unordered_map<const CacheNode*, Entry> entries_;  // nodes with a window block or file
  int64_t evictions_ = 0;
};

}  // namespace hearth
