// The attention blocks' disk tier in the prefix cache (kv/prefix_cache.h): rebuilding the tree
// from it at start, reading blocks back, blocks another process sharing the folder wrote, and
// keeping it within its budget.
#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "kv/prefix_cache_node.h"

namespace hearth {

// A node for a disk entry below `parent`, without a block (on disk only).
PrefixCache::Node* PrefixCache::adopt_entry(Node* parent, DiskEntry&& e) {
  auto n = std::make_unique<Node>();
  n->parent = parent;
  n->tokens = std::move(e.tokens);
  n->has_text = e.has_text;
  n->text = std::move(e.text);
  n->ends = std::move(e.ends);
  n->hash = e.hash;
  n->on_disk = true;
  Node* raw = n.get();
  parent->children.push_back(std::move(n));
  ++stats_.nodes;
  return raw;
}

// Rebuilds the tree from the disk tier's entries: every entry whose parent chain reaches the
// root becomes a node without a block; the rest can never be matched and are removed.
void PrefixCache::adopt_disk_nodes() {
  std::vector<DiskEntry> entries = disk_->scan();
  std::multimap<uint64_t, size_t> by_parent;
  for (size_t i = 0; i < entries.size(); ++i) by_parent.emplace(entries[i].parent, i);
  std::vector<uint8_t> used(entries.size(), 0);
  const size_t bt = static_cast<size_t>(pool_.block_tokens());
  std::vector<Node*> frontier = {root_.get()};
  while (!frontier.empty()) {
    Node* parent = frontier.back();
    frontier.pop_back();
    if (parent != root_.get() && parent->tokens.size() < bt) continue;  // partial: a leaf
    auto [lo, hi] = by_parent.equal_range(parent->hash);
    for (auto it = lo; it != hi; ++it) {
      DiskEntry& e = entries[it->second];
      if (used[it->second] || e.tokens.size() > bt) continue;
      used[it->second] = 1;
      frontier.push_back(adopt_entry(parent, std::move(e)));
    }
  }
  for (size_t i = 0; i < entries.size(); ++i)
    if (!used[i]) disk_->remove(entries[i].hash);
}

bool PrefixCache::load_from_disk(Node& n) {
  if (!disk_ || !n.on_disk) return false;
  std::optional<int32_t> b = pool_.allocate();
  while (!b && evict_one()) b = pool_.allocate();
  if (!b) return false;
  if (!disk_->read(n.hash, n.tokens, pool_.arena().k(*b, 0))) {
    pool_.release(*b);
    remove(&n);  // corrupt or missing: its subtree can no longer be reached
    return false;
  }
  n.block = *b;
  resident_.insert(&n);
  return true;
}

// Keeps the disk tier within its budget: the least-recently-used leaves there go.
void PrefixCache::trim_disk() {
  trim_lru(
      *disk_,
      [&] {
        std::vector<std::pair<uint64_t, Node*>> leaves;
        for_each_node(*root_, [&](Node* n) {
          if (n != root_.get() && n->block < 0 && n->children.empty())
            leaves.emplace_back(n->last_used, n);
        });
        return leaves;
      },
      [&](Node* n) { remove(n); });
}

// A whole block `block_tokens` below `parent` that the tree lacks but the disk tier has (another
// process sharing the folder wrote it after this one scanned it): adopted as an on-disk node, read
// back when a match takes it. Only where the tree's own disk nodes could be: plain attention
// caches (a probed node would hold no other kind's state, which a match there needs), below the
// root or a whole block.
PrefixCache::Node* PrefixCache::probe_disk(Node* parent, std::span<const int32_t> block_tokens) {
  const auto bt = static_cast<size_t>(pool_.block_tokens());
  if (!disk_ || !stores_.empty() || block_tokens.size() != bt) return nullptr;
  if (parent != root_.get() && parent->tokens.size() != bt) return nullptr;
  std::optional<DiskEntry> e = disk_->probe(chain_hash(parent->hash, block_tokens), block_tokens);
  if (!e || e->parent != parent->hash) return nullptr;
  ++stats_.probed_blocks;
  return adopt_entry(parent, std::move(*e));
}

void PrefixCache::extend_from_disk(PrefixMatch& m, std::span<const int32_t> tokens,
                                   int64_t max_tokens) {
  const int64_t bt = pool_.block_tokens();
  const int64_t n = m.n_tokens();
  if (!disk_ || !stores_.empty() || n > static_cast<int64_t>(tokens.size()) ||
      !std::equal(m.tokens.begin(), m.tokens.end(), tokens.begin()))
    return;
  // From the last block boundary of the match: a match that ends inside a block (a prompt that
  // leaves a cached path there, e.g. another conversation's system prompt) may continue on disk.
  const int64_t base = n / bt * bt;
  Node* node = root_.get();
  if (base > 0) {
    const Step end = find_path(std::span(m.tokens).first(static_cast<size_t>(base)));
    if (!end.node || end.used != bt) return;
    node = end.node;
  }
  const int64_t limit = std::min<int64_t>(max_tokens, static_cast<int64_t>(tokens.size()));
  std::vector<Step> path;
  for (int64_t pos = base; pos + bt <= limit; pos += bt) {
    const auto want = tokens.subspan(static_cast<size_t>(pos), static_cast<size_t>(bt));
    Node* next = nullptr;
    for (const auto& c : node->children)
      if (c->tokens.size() == want.size() &&
          std::equal(want.begin(), want.end(), c->tokens.begin()))
        next = c.get();
    if (!next) next = probe_disk(node, want);
    if (!next) break;
    path.push_back({next, bt});
    node = next;
  }
  if (base + static_cast<int64_t>(path.size()) * bt <= n) return;  // no longer than the match
  cut_match(m, base);
  PrefixMatch more;
  take(path, more);
  const bool text_throughout =
      m.ends.size() == m.tokens.size() && more.ends.size() == more.tokens.size();
  if (text_throughout) {
    for (uint32_t e : more.ends) m.ends.push_back(static_cast<uint32_t>(m.text_bytes) + e);
    m.text_bytes += more.text_bytes;
  }
  m.tokens.insert(m.tokens.end(), more.tokens.begin(), more.tokens.end());
  m.blocks.insert(m.blocks.end(), more.blocks.begin(), more.blocks.end());
  m.disk_tokens += more.disk_tokens;
}

// Cuts a plain match back to its first `n` tokens (a block boundary), giving back the blocks
// after them.
void PrefixCache::cut_match(PrefixMatch& m, int64_t n) {
  const int64_t bt = pool_.block_tokens();
  const auto keep = static_cast<size_t>(n / bt);
  for (size_t i = keep; i < m.blocks.size(); ++i) pool_.release(m.blocks[i]);
  stats_.hit_tokens -= m.n_tokens() - n;
  m.blocks.resize(std::min(keep, m.blocks.size()));
  m.tokens.resize(static_cast<size_t>(n));
  if (m.ends.size() > m.tokens.size()) m.ends.resize(m.tokens.size());
  m.text_bytes = m.ends.size() == m.tokens.size() && n > 0 ? m.ends.back() : 0;
  m.disk_tokens = std::min(m.disk_tokens, n);
}

}  // namespace hearth
