// Recurrent-state snapshots of the prefix cache (kv/prefix_cache.h), for hybrid models: the
// cached state of their recurrent layers.
//
// A recurrent state cannot be trimmed back to an earlier position, so a path holds state
// snapshots at token positions. A snapshot at position p (the state after tokens [0, p)) belongs
// to the node holding token p-1 and owns one slot of the state pool; it is usable while that
// node is in the tree (its blocks resident or on disk), and goes with the node. A match on such
// a cache is cut back to the last snapshot at or before its end (position 0: nothing restored)
// and the snapshot is copied into the caller's slot, so a hit resumes exactly where the snapshot
// was taken. Snapshots are evicted on their own (evict): least-recently-used first, interval
// snapshots before anchors (the ends of prompts, replies and branch points, where
// conversations continue). With a disk tier for snapshots, an evicted snapshot is written out
// and stays in the tree to be read back on a hit (restored straight into the caller's slot),
// every snapshot is written at shutdown, and a restart finds them on the paths it rebuilds; a
// file that cannot be read back is dropped and the match cut back further. Where snapshots are
// taken is the KV manager's placement policy (kv/kv_manager.h).
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "kv/layer_store.h"

namespace hearth {

class DiskTier;
class StatePool;

class SnapshotStore final : public LayerStore {
 public:
  // `states`: the pool whose snapshot slots the snapshots own; `disk`: their disk tier (files of
  // one slot each), beside the blocks'; null: none.
  SnapshotStore(StatePool& states, DiskTier* disk);
  ~SnapshotStore() override;

  // Whether `tokens` is a cached path (all of it) without a snapshot at its end, i.e. whether
  // add() would keep one there. With `anchor`, a snapshot already there becomes an anchor.
  bool wants(std::span<const int32_t> tokens, bool anchor = false);
  // Takes over snapshot `slot`: the state after `tokens`, kept at the end of their cached path
  // (an anchor: evicted after interval snapshots). Released when the path is not cached or
  // already has one there.
  void add(std::span<const int32_t> tokens, int32_t slot, bool anchor);
  // Frees one snapshot slot: the least-recently-used interval snapshot, else anchor; false when
  // the cache holds none. `intervals_only`: anchors stay (false when no interval snapshot is in
  // memory).
  bool evict(bool intervals_only = false);

  void adopt_disk() override;
  bool resume(CachePath& path, const MayEnd& may_end, int32_t slot, PrefixMatch& m) override;
  void pass_on(CacheNode& from, CacheNode& to) override;
  void removed(CacheNode& n) override;
  void flush() override;
  void add_stats(PrefixCacheStats& s) const override;

 private:
  struct Snapshot {
    int64_t used = 0;     // the state after the node's first `used` tokens (1..block_tokens)
    int32_t slot = -1;    // in the state pool, owned by the cache; -1: on disk only
    bool anchor = false;  // the end of a prompt, reply or branch: evicted after interval ones
    uint64_t last_used = 0;
    bool on_disk = false;  // a valid copy is on the snapshots' disk tier (or queued)
    uint64_t hash = 0;     // chain hash of the path up to it: its file's name
  };
  Snapshot* cut(CachePath& path, const MayEnd& may_end);
  bool restore(const CacheNode& n, Snapshot& s, int32_t slot);
  void write(const CacheNode& n, Snapshot& s);
  void erase(const CacheNode* n, size_t i);
  void trim_disk();

  StatePool& states_;
  DiskTier* disk_;
  std::unordered_map<const CacheNode*, std::vector<Snapshot>> snaps_;  // per node holding any
  uint64_t tick_ = 0;
  int64_t inserted_ = 0, evictions_ = 0, hits_ = 0, disk_hits_ = 0;
};

}  // namespace hearth
