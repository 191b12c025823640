// The prefix cache's tree nodes and snapshots, shared by its two source files (prefix_cache.cpp:
// the tree, matching, blocks and their disk tier; prefix_cache_snapshots.cpp: recurrent-state
// snapshots). Internal to kv/.
#pragma once

#include <algorithm>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kv/disk_tier.h"
#include "kv/prefix_cache.h"

namespace hearth {

struct PrefixCache::Snapshot {
  int64_t used = 0;     // the state after the node's first `used` tokens (1..block_tokens)
  int32_t slot = -1;    // in the state pool, owned by the cache; -1: on disk only
  bool anchor = false;  // the end of a prompt, reply or branch: evicted after interval ones
  uint64_t last_used = 0;
  bool on_disk = false;  // a valid copy is on the snapshots' disk tier (or queued)
  uint64_t hash = 0;     // chain hash of the path up to it: its file's name
};

struct PrefixCache::Node {
  Node* parent = nullptr;
  std::vector<std::unique_ptr<Node>> children;
  std::vector<int32_t> tokens;  // 1..block_tokens; fewer only in a leaf
  bool has_text = false;
  std::string text;
  std::vector<uint32_t> ends;  // per token, into `text`
  int32_t block = -1;          // -1: not in memory (on disk)
  bool on_disk = false;        // a valid copy is on disk (or queued)
  uint64_t hash = kChainRoot;  // chain hash through this node
  uint64_t last_used = 0;
  std::vector<Snapshot> snaps;  // recurrent caches: states at positions inside this node
  int32_t window_block = -1;    // window caches: the same positions' window block (-1: none)
  int64_t window_used = 0;      // holding the K/V of the node's first window_used tokens
  bool window_on_disk = false;  // a window block of all its tokens is on the window disk tier
  bool window_covers(int64_t needed) const {
    return (window_block >= 0 && window_used >= needed) || window_on_disk;
  }

  uint32_t text_begin(size_t i) const { return i == 0 ? 0 : ends[i - 1]; }
  // Takes this node's slice of a path's per-token text, starting at the path's token `pos`.
  void set_text(const TokenText& path, size_t pos) {
    const size_t len = tokens.size();
    const uint32_t b0 = pos == 0 ? 0 : path.ends[pos - 1];
    has_text = true;
    text = std::string(path.text.substr(b0, path.ends[pos + len - 1] - b0));
    ends.resize(len);
    for (size_t i = 0; i < len; ++i) ends[i] = path.ends[pos + i] - b0;
  }
  DiskEntry disk_entry() const { return {hash, parent->hash, tokens, has_text, text, ends}; }
  bool has_resident_child() const {
    for (const auto& c : children)
      if (c->block >= 0) return true;
    return false;
  }
};

inline size_t common_prefix(std::span<const int32_t> a, std::span<const int32_t> b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

}  // namespace hearth
