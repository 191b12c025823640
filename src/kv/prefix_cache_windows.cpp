// Window blocks of the prefix cache (kv/prefix_cache.h): which match ends their window blocks
// cover, handing them to a match, keeping them at insert, and their eviction.
#include <unordered_map>

#include "kv/prefix_cache_node.h"
#include "util/error.h"

namespace hearth {

// Whether a match ending at `end`, its last step `last` (at depth (end - last.used) / B, after
// path's full blocks), has the window blocks of positions [end - n_swa + 1, end) on its path:
// the next token's window. Nothing before position 0: a match of 0 tokens always qualifies.
bool PrefixCache::window_covered(const std::vector<Step>& path, const Step& last,
                                 int64_t end) const {
  if (end <= 0) return true;
  const int64_t bt = pool_.block_tokens();
  const int64_t last_depth = (end - last.used) / bt;
  const int64_t first = std::max<int64_t>(0, end - n_swa_ + 1);
  for (int64_t d = first / bt; d <= (end - 1) / bt; ++d) {
    const Node* n = d == last_depth ? last.node : path[static_cast<size_t>(d)].node;
    const int64_t needed = d == last_depth ? last.used : bt;  // a prefix of the node's tokens
    if (!n->window_covers(needed)) return false;
  }
  return true;
}

// Keeps the longest prefix of `path` that may end (its window covered, and the caller's own
// constraint); empty when none (a match of 0 tokens).
void PrefixCache::cut_to_window(std::vector<Step>& path, const MayEnd& may_end) {
  int64_t total = 0;
  std::vector<int64_t> start(path.size(), 0);
  for (size_t i = 0; i < path.size(); ++i) {
    start[i] = total;
    total += path[i].used;
  }
  for (size_t i = path.size(); i-- > 0;) {
    for (int64_t used = path[i].used; used >= 1; --used) {
      if (!may_end({path[i].node, used}, start[i] + used)) continue;
      stats_.cut_tokens += total - (start[i] + used);
      path.resize(i + 1);
      path[i].used = used;
      return;
    }
  }
  stats_.cut_tokens += total;
  path.clear();
}

// The window blocks of a match taken from `path` (cut so that its window is covered): shared
// where the match uses the whole block, copied where the caller writes next, -1 before the
// window. A match that came out shorter than its path (a block not read back from disk) may not
// have its window covered: it is given up then (the caller recomputes from position 0).
void PrefixCache::take_windows(const std::vector<Step>& path, PrefixMatch& m) {
  const int64_t bt = pool_.block_tokens(), end = m.n_tokens();
  const int64_t first_depth = std::max<int64_t>(0, end - n_swa_ + 1) / bt;
  bool ok = m.blocks.size() <= path.size() &&
            (m.blocks.empty() || window_covered(path, path[m.blocks.size() - 1], end));
  for (size_t i = 0; ok && i < m.blocks.size(); ++i) {
    Node& n = *path[i].node;
    if (static_cast<int64_t>(i) < first_depth) {
      m.window_blocks.push_back(-1);
    } else if (n.window_block < 0 && !load_window(n)) {
      ok = false;
    } else if (path[i].used == bt && n.window_used == bt) {
      window_->retain(n.window_block);
      m.window_blocks.push_back(n.window_block);
    } else {                            // the caller writes into it next: a private copy
      window_->retain(n.window_block);  // keep the source through evictions below
      std::optional<int32_t> b = window_->allocate();
      while (!b && evict_window_one()) b = window_->allocate();
      if (b) window_->copy(*b, n.window_block);
      window_->release(n.window_block);
      if (!b) ok = false;
      if (b) m.window_blocks.push_back(*b);
    }
  }
  if (ok) return;
  for (int32_t b : m.blocks) pool_.release(b);
  for (int32_t b : m.window_blocks)
    if (b >= 0) window_->release(b);
  stats_.hit_tokens -= m.n_tokens();
  stats_.disk_hit_tokens -= m.disk_tokens;
  stats_.cut_tokens += m.n_tokens();
  m = PrefixMatch{};
}

// Takes over a reference to a window block holding the K/V of node n's first `used` tokens
// (-1: none). The node keeps whichever of its own and this one holds more of its tokens (the
// K/V of a position is the same in both): a partial node superseded by a longer one passes its
// window block on, valid for the tokens it had.
void PrefixCache::adopt_window(Node* n, int32_t window_block, int64_t used) {
  if (window_block < 0) return;
  if (n->window_block >= 0 && n->window_used >= used) {
    window_->release(window_block);
    return;
  }
  if (n->window_block >= 0) window_->release(n->window_block);
  n->window_block = window_block;
  n->window_used = used;
  windowed_.insert(n);
}

void PrefixCache::drop_window(Node* n) {
  if (n->window_block < 0) return;
  window_->release(n->window_block);
  n->window_block = -1;
  n->window_used = 0;
  windowed_.erase(n);
}

bool PrefixCache::evict_window_one() {
  Node* victim = nullptr;
  for (Node* n : windowed_) {
    if (window_->refcount(n->window_block) != 1) continue;
    if (!victim || n->last_used < victim->last_used) victim = n;
  }
  if (!victim) return false;
  evict_window(victim);
  ++stats_.window_evictions;
  return true;
}

// Frees n's window block, writing it to the window disk tier first when it holds all of the
// node's tokens (a partial one passed on by a superseded node is dropped).
void PrefixCache::evict_window(Node* n) {
  if (n->window_block < 0) return;
  if (window_disk_ && !n->window_on_disk &&
      n->window_used == static_cast<int64_t>(n->tokens.size())) {
    window_disk_->write({n->hash, n->parent->hash, n->tokens, false, {}, {}},
                        window_->arena().k(n->window_block, 0));
    n->window_on_disk = true;
  }
  drop_window(n);
  if (window_disk_) trim_window_disk();
}

// A window block on disk only, read back into a block of its own (held by the node).
bool PrefixCache::load_window(Node& n) {
  if (!window_disk_ || !n.window_on_disk) return false;
  std::optional<int32_t> b = window_->allocate();
  while (!b && evict_window_one()) b = window_->allocate();
  if (!b) return false;
  if (!window_disk_->read(n.hash, n.tokens, window_->arena().k(*b, 0))) {
    window_->release(*b);
    n.window_on_disk = false;  // corrupt or missing
    window_disk_->remove(n.hash);
    return false;
  }
  adopt_window(&n, *b, static_cast<int64_t>(n.tokens.size()));
  return true;
}

// Keeps the window disk tier within its budget: the least-recently-used files go first.
void PrefixCache::trim_window_disk() {
  while (window_disk_->bytes() > window_disk_->max_bytes()) {
    Node* old = nullptr;
    std::vector<Node*> stack = {root_.get()};
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      for (const auto& c : n->children) stack.push_back(c.get());
      if (n->window_on_disk && n->window_block < 0 && (!old || n->last_used < old->last_used))
        old = n;
    }
    if (!old) return;
    window_disk_->remove(old->hash);
    old->window_on_disk = false;
  }
}

// Shutdown: every whole window block in memory goes to disk, to be found by the next start.
void PrefixCache::flush_windows() {
  if (!window_disk_) return;
  for (Node* n : windowed_) {
    if (n->window_on_disk || n->window_used != static_cast<int64_t>(n->tokens.size())) continue;
    window_disk_->write({n->hash, n->parent->hash, n->tokens, false, {}, {}},
                        window_->arena().k(n->window_block, 0));
    n->window_on_disk = true;
  }
  window_disk_->flush();
}

// After the tree is rebuilt from the blocks' disk tier: each window file of a node in it joins
// that node (on disk only); the others can never be used and are removed.
void PrefixCache::adopt_disk_windows() {
  std::unordered_map<uint64_t, Node*> by_hash;
  std::vector<Node*> stack = {root_.get()};
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    if (n != root_.get()) by_hash[n->hash] = n;
    for (const auto& c : n->children) stack.push_back(c.get());
  }
  for (const DiskEntry& e : window_disk_->scan()) {
    auto it = by_hash.find(e.hash);
    if (it != by_hash.end() && it->second->tokens == e.tokens &&
        it->second->parent->hash == e.parent)
      it->second->window_on_disk = true;
    else
      window_disk_->remove(e.hash);
  }
}

int64_t PrefixCache::reclaimable_window_blocks() const {
  int64_t n = 0;
  for (Node* node : windowed_)
    if (window_->refcount(node->window_block) == 1) ++n;
  return n;
}

}  // namespace hearth
