// The prefix cache's tree nodes, shared by the tree (kv/prefix_cache.cpp) and the stores of the
// other layer kinds (kv/layer_store.h), which keep their own per-node data keyed by node.
// Internal to kv/.
#pragma once

#include <algorithm>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kv/disk_tier.h"
#include "kv/prefix_cache.h"

namespace hearth {

// One block's positions: the tokens, their text, and the attention block holding their K/V.
struct CacheNode {
  CacheNode* parent = nullptr;
  std::vector<std::unique_ptr<CacheNode>> children;
  std::vector<int32_t> tokens;  // 1..block_tokens; fewer only in a leaf
  bool has_text = false;
  std::string text;
  std::vector<uint32_t> ends;  // per token, into `text`
  int32_t block = -1;          // -1: not in memory (on disk)
  bool on_disk = false;        // a valid copy is on disk (or queued)
  uint64_t hash = kChainRoot;  // chain hash through this node
  uint64_t last_used = 0;

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
  // The entry of another kind's file for this node's first `used` tokens (no text).
  DiskEntry state_entry(int64_t used) const {
    return {chain_hash(parent->hash, std::span(tokens).first(static_cast<size_t>(used))),
            parent->hash,
            {tokens.begin(), tokens.begin() + used},
            false,
            {},
            {}};
  }
  bool has_resident_child() const {
    for (const auto& c : children)
      if (c->block >= 0) return true;
    return false;
  }
};

// Every node under `root` and itself, depth first (the last child first).
template <class F>
void for_each_node(CacheNode& root, F&& f) {
  std::vector<CacheNode*> stack = {&root};
  while (!stack.empty()) {
    CacheNode* n = stack.back();
    stack.pop_back();
    for (const auto& c : n->children) stack.push_back(c.get());
    f(n);
  }
}

inline size_t common_prefix(std::span<const int32_t> a, std::span<const int32_t> b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

}  // namespace hearth
