// What the prefix cache (kv/prefix_cache.h) keeps for one kind of layer besides the attention
// blocks: the interface each such kind implements, one file each (kv/snapshot_store.h: the
// recurrent-state snapshots of hybrid models; kv/window_store.h: the window blocks of
// sliding-window layers). A new kind of layer state is a new store, not new branches in the tree.
//
// The radix tree stays one tree: its nodes, tokens, text, matching and LRU clock, and the paged
// attention blocks with their disk tier. The blocks are the tree's own kind rather than a store:
// a node exists to stand for one block's positions (the block tier's files are what the tree is
// rebuilt from at start, and what another process sharing the folder leaves to be probed), so
// every other kind's state hangs off the positions they define. A store keeps its own per-node
// data, keyed by node, its own pool and disk tier, and is told by these hooks what the tree does.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace hearth {

struct CacheNode;  // kv/prefix_cache_node.h
class PrefixCache;
struct PrefixMatch;
struct PrefixCacheStats;

// One step of a match's path: a node and how many of its tokens the match uses.
struct PathStep {
  CacheNode* node;
  int64_t used;
};
using CachePath = std::vector<PathStep>;  // index = depth in blocks
// May a match end after `step` (at global position `end`)?
using MayEnd = std::function<bool(const PathStep& step, int64_t end)>;

class LayerStore {
 public:
  virtual ~LayerStore() = default;

  // Joins the cache that owns it, once, before anything else (a store checks its geometry
  // against the tree's here).
  virtual void bind(const PrefixCache& tree) { tree_ = &tree; }
  // At start, after the tree is rebuilt from the blocks' disk tier: this kind's files join the
  // nodes they belong to (on disk only); the others can never be used and are removed.
  virtual void adopt_disk() {}

  // Matching, in this order. Whether this kind's state lets a match end at `end` (its last
  // step `last`, the steps before it `path`'s).
  virtual bool covers(const CachePath& /*path*/, const PathStep& /*last*/, int64_t /*end*/) const {
    return true;
  }
  // A kind whose state cannot be cut back to any position (recurrent state) decides where a
  // match resumes: it cuts `path` back to such a position where `may_end` holds, restores its
  // state there into `slot` and notes it in `m`; true when it did. When no store does, the tree
  // cuts the path back to the last position `may_end` allows.
  virtual bool resume(CachePath& /*path*/, const MayEnd& /*may_end*/, int32_t /*slot*/,
                      PrefixMatch& /*m*/) {
    return false;
  }
  // After the tree took the blocks of `path` into `m`: this kind's state for them, into `m`.
  // False: it cannot be had, and the match is given up (give_back, then recomputed).
  virtual bool take(const CachePath& /*path*/, PrefixMatch& /*m*/) { return true; }
  // Gives back what take() put into `m`.
  virtual void give_back(PrefixMatch& /*m*/) {}

  // Insertion: `from`, a partial leaf that `to` (a new, longer node starting with all of its
  // tokens) supersedes, passes its state on before it is removed.
  virtual void pass_on(CacheNode& /*from*/, CacheNode& /*to*/) {}
  // `n` lost its block to the blocks' disk tier (it stays in the tree, on disk).
  virtual void block_evicted(CacheNode& /*n*/) {}
  // `n` leaves the tree: its state here goes too (files included).
  virtual void removed(CacheNode& /*n*/) {}
  // Shutdown: what is in memory goes to this kind's disk tier, to be found by the next start.
  virtual void flush() {}
  virtual void add_stats(PrefixCacheStats& /*s*/) const {}

 protected:
  const PrefixCache* tree_ = nullptr;
};

}  // namespace hearth
