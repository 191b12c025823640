#include "kv/window_store.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "kv/block_pool.h"
#include "kv/prefix_cache_node.h"
#include "util/error.h"

namespace hearth {

WindowStore::WindowStore(BlockPool& window, int64_t n_swa, DiskTier* disk)
    : window_(window), n_swa_(n_swa), disk_(disk) {
  if (disk_ && disk_->block_bytes() != window_.arena().block_stride())
    fail("cache: window disk tier block size {} != window block size {}", disk_->block_bytes(),
         window_.arena().block_stride());
}

WindowStore::~WindowStore() {
  for (const auto& [node, e] : entries_)
    if (e.block >= 0) window_.release(e.block);
}

void WindowStore::bind(const PrefixCache& tree) {
  LayerStore::bind(tree);
  if (window_.block_tokens() != tree.block_tokens())
    fail("cache: window blocks of {} tokens beside blocks of {}", window_.block_tokens(),
         tree.block_tokens());
}

// Whether a match ending at `end`, its last step `last` (at depth (end - last.used) / B, after
// path's full blocks), has the window blocks of positions [end - n_swa + 1, end) on its path:
// the next token's window. Nothing before position 0: a match of 0 tokens always qualifies.
bool WindowStore::covers(const CachePath& path, const PathStep& last, int64_t end) const {
  if (end <= 0) return true;
  const int64_t bt = tree_->block_tokens();
  const int64_t last_depth = (end - last.used) / bt;
  const int64_t first = std::max<int64_t>(0, end - n_swa_ + 1);
  for (int64_t d = first / bt; d <= (end - 1) / bt; ++d) {
    const CacheNode* n = d == last_depth ? last.node : path[static_cast<size_t>(d)].node;
    const int64_t needed = d == last_depth ? last.used : bt;  // a prefix of the node's tokens
    auto it = entries_.find(n);
    if (it == entries_.end() || !it->second.covers(needed)) return false;
  }
  return true;
}

// The window blocks of a match taken from `path` (cut so that its window is covered): shared
// where the match uses the whole block, copied where the caller writes next, -1 before the
// window. A match that came out shorter than its path (a block not read back from disk) may not
// have its window covered: it is given up then (the caller recomputes from position 0).
bool WindowStore::take(const CachePath& path, PrefixMatch& m) {
  const int64_t bt = tree_->block_tokens(), end = m.n_tokens();
  const auto first_depth = static_cast<size_t>(std::max<int64_t>(0, end - n_swa_ + 1) / bt);
  if (m.blocks.size() > path.size() ||
      (!m.blocks.empty() && !covers(path, path[m.blocks.size() - 1], end)))
    return false;
  for (size_t i = 0; i < m.blocks.size(); ++i) {
    const int32_t b = i < first_depth ? -1 : share_or_copy(*path[i].node, path[i].used);
    if (i >= first_depth && b < 0) return false;
    m.window_blocks.push_back(b);
  }
  return true;
}

// A reference to n's window block for a match using `used` of its tokens (read back from disk
// first when it is there only): shared when both hold the whole block, else a private copy,
// since the caller writes into it next. -1 when it cannot be had.
int32_t WindowStore::share_or_copy(const CacheNode& n, int64_t used) {
  auto it = entries_.find(&n);
  if ((it == entries_.end() || it->second.block < 0) && !load(n)) return -1;
  const Entry& e = entries_.at(&n);
  const int32_t source = e.block;
  window_.retain(source);  // shared, or kept alive through evictions below
  if (used == tree_->block_tokens() && e.used == used) return source;
  std::optional<int32_t> b = window_.allocate();
  while (!b && evict_one()) b = window_.allocate();
  if (b) window_.copy(*b, source);
  window_.release(source);
  return b ? *b : -1;
}

void WindowStore::give_back(PrefixMatch& m) {
  for (int32_t b : m.window_blocks)
    if (b >= 0) window_.release(b);
  m.window_blocks.clear();
}

void WindowStore::adopt(const std::vector<CacheNode*>& nodes, std::span<const int32_t> window) {
  for (size_t i = 0; i < window.size(); ++i) {
    if (window[i] < 0) continue;
    if (i < nodes.size())
      adopt(*nodes[i], window[i], static_cast<int64_t>(nodes[i]->tokens.size()));
    else
      window_.release(window[i]);
  }
}

// Takes over a reference to a window block holding the K/V of node n's first `used` tokens
// (-1: none). The node keeps whichever of its own and this one holds more of its tokens (the
// K/V of a position is the same in both): a partial node superseded by a longer one passes its
// window block on, valid for the tokens it had.
void WindowStore::adopt(const CacheNode& n, int32_t block, int64_t used) {
  if (block < 0) return;
  Entry& e = entries_[&n];
  if (e.block >= 0 && e.used >= used) {
    window_.release(block);
    return;
  }
  if (e.block >= 0) window_.release(e.block);
  e.block = block;
  e.used = used;
}

void WindowStore::pass_on(CacheNode& from, CacheNode& to) {
  auto it = entries_.find(&from);
  if (it == entries_.end() || it->second.block < 0) return;
  const int32_t block = std::exchange(it->second.block, -1);
  const int64_t used = std::exchange(it->second.used, 0);
  if (!it->second.on_disk) entries_.erase(it);
  adopt(to, block, used);
}

// Frees n's window block (its file, if any, stays).
void WindowStore::drop(const CacheNode& n) {
  auto it = entries_.find(&n);
  if (it == entries_.end() || it->second.block < 0) return;
  window_.release(it->second.block);
  it->second.block = -1;
  it->second.used = 0;
  if (!it->second.on_disk) entries_.erase(it);
}

void WindowStore::removed(CacheNode& n) {
  drop(n);
  auto it = entries_.find(&n);
  if (it == entries_.end()) return;
  if (disk_) disk_->remove(n.hash);  // on disk: what is left of an entry without a block
  entries_.erase(it);
}

bool WindowStore::evict_one() {
  const CacheNode* victim = nullptr;
  for (const auto& [node, e] : entries_) {
    if (e.block < 0 || window_.refcount(e.block) != 1) continue;
    if (!victim || node->last_used < victim->last_used) victim = node;
  }
  if (!victim) return false;
  evict(*victim);
  ++evictions_;
  return true;
}

void WindowStore::block_evicted(CacheNode& n) {
  evict(n);
}

// Frees n's window block, writing it to the disk tier first when it holds all of the node's
// tokens (a partial one passed on by a superseded node is dropped).
void WindowStore::evict(const CacheNode& n) {
  auto it = entries_.find(&n);
  if (it == entries_.end() || it->second.block < 0) return;
  if (disk_ && it->second.used == static_cast<int64_t>(n.tokens.size())) write(n, it->second);
  drop(n);
  if (disk_) trim_disk();
}

// Writes n's window block to the disk tier unless a valid copy is there.
void WindowStore::write(const CacheNode& n, Entry& e) {
  if (e.on_disk) return;
  disk_->write(n.state_entry(e.used), window_.arena().k(e.block, 0));
  e.on_disk = true;
}

// A window block on disk only, read back into a block of its own (held by the node).
bool WindowStore::load(const CacheNode& n) {
  if (!disk_ || !entries_.count(&n)) return false;
  std::optional<int32_t> b = window_.allocate();
  while (!b && evict_one()) b = window_.allocate();
  if (!b) return false;
  auto it = entries_.find(&n);  // (the evictions may have trimmed its file)
  if (it == entries_.end() || !disk_->read(n.hash, n.tokens, window_.arena().k(*b, 0))) {
    window_.release(*b);
    if (it != entries_.end()) entries_.erase(it);  // corrupt or missing
    disk_->remove(n.hash);
    return false;
  }
  adopt(n, *b, static_cast<int64_t>(n.tokens.size()));
  return true;
}

// Keeps the window disk tier within its budget: the least-recently-used files go first.
void WindowStore::trim_disk() {
  trim_lru(
      *disk_,
      [&] {
        std::vector<std::pair<uint64_t, const CacheNode*>> on_disk;
        for_each_node(tree_->root(), [&](const CacheNode* n) {
          auto it = entries_.find(n);
          if (it != entries_.end() && it->second.on_disk && it->second.block < 0)
            on_disk.emplace_back(n->last_used, n);
        });
        return on_disk;
      },
      [&](const CacheNode* n) {
        disk_->remove(n->hash);
        entries_.erase(n);
      });
}

// Shutdown: every whole window block in memory goes to disk, to be found by the next start.
void WindowStore::flush() {
  if (!disk_) return;
  for (auto& [node, e] : entries_)
    if (e.block >= 0 && e.used == static_cast<int64_t>(node->tokens.size())) write(*node, e);
  disk_->flush();
}

// After the tree is rebuilt from the blocks' disk tier: each window file of a node in it joins
// that node (on disk only); the others can never be used and are removed.
void WindowStore::adopt_disk() {
  if (!disk_) return;
  std::unordered_map<uint64_t, CacheNode*> by_hash;
  for_each_node(tree_->root(), [&](CacheNode* n) {
    if (n->parent) by_hash[n->hash] = n;
  });
  for (const DiskEntry& e : disk_->scan()) {
    auto it = by_hash.find(e.hash);
    if (it != by_hash.end() && it->second->tokens == e.tokens &&
        it->second->parent->hash == e.parent)
      entries_[it->second].on_disk = true;
    else
      disk_->remove(e.hash);
  }
}

void WindowStore::add_stats(PrefixCacheStats& s) const {
  for (const auto& [node, e] : entries_) s.window_blocks += e.block >= 0 ? 1 : 0;
  s.window_evictions = evictions_;
}

int64_t WindowStore::reclaimable() const {
  int64_t n = 0;
  for (const auto& [node, e] : entries_)
    if (e.block >= 0 && window_.refcount(e.block) == 1) ++n;
  return n;
}

}  // namespace hearth
