// Recurrent-state snapshots of the prefix cache (kv/prefix_cache.h): restoring one at the end
// of a match, keeping new ones, their eviction and their disk tier.
#include <unordered_map>

#include "kv/prefix_cache_node.h"
#include "kv/state_pool.h"
#include "util/error.h"

namespace hearth {

// A recurrent cache resumes only where a snapshot is: the path is cut back to the last one
// (that may end a match) and its state copied out before take() can evict anything. A snapshot
// that cannot be read back is dropped and the path cut back further.
PrefixMatch PrefixCache::take_restoring(std::vector<Step>& path, int32_t state_slot,
                                        const MayEnd& may_end_as_given) {
  // Window caches: a match may end only where the window blocks before its end are cached.
  MayEnd may_end = may_end_as_given;
  if (window_)
    may_end = [&](const Step& st, int64_t end) {
      return may_end_as_given(st, end) && window_covered(path, st, end);
    };
  if (!states_) {
    if (window_) cut_to_window(path, may_end);
    PrefixMatch m = take(path);
    if (window_) take_windows(path, m);
    return m;
  }
  if (state_slot < 0) fail("cache: a recurrent match needs a state slot to restore into");
  int64_t shared = 0;
  for (const Step& st : path) shared += st.used;
  Snapshot* snap = cut_to_snapshot(path, may_end);
  while (snap && !restore(*path.back().node, *snap, state_slot))
    snap = cut_to_snapshot(path, may_end);
  int64_t at = 0;
  for (const Step& st : path) at += st.used;
  stats_.cut_tokens += shared - at;
  PrefixMatch m = take(path);
  if (window_) take_windows(path, m);
  m.n_shared = shared;
  m.state_tokens = at;
  return m;
}

// Copies snapshot `s` of node `n` into `state_slot` (from memory or its file); false when its
// file is gone or corrupt (the snapshot is dropped then).
bool PrefixCache::restore(Node& n, Snapshot& s, int32_t state_slot) {
  if (s.slot >= 0) {
    states_->copy(state_slot, s.slot);
  } else {
    const auto tokens = std::span(n.tokens).first(static_cast<size_t>(s.used));
    auto* dst = reinterpret_cast<uint8_t*>(states_->arena().slot(state_slot));
    if (!state_disk_ || !state_disk_->read(s.hash, tokens, dst)) {
      erase_snapshot(&n, static_cast<size_t>(&s - n.snaps.data()));
      return false;
    }
    ++stats_.snapshot_disk_hits;
  }
  s.last_used = ++tick_;
  ++stats_.snapshot_hits;
  return true;
}

// Keeps the longest prefix of `path` that ends at a snapshot; empty when there is none. At each
// level a sibling of the path's node counts too, for a snapshot inside the tokens they share: a
// request that left a cached path at a branch point took its snapshot there on its own node,
// and the next request editing the same place may walk the other branch (the state after the
// same tokens is the same state).
PrefixCache::Snapshot* PrefixCache::cut_to_snapshot(std::vector<Step>& path,
                                                    const MayEnd& may_end) {
  std::vector<int64_t> start(path.size(), 0);
  for (size_t i = 1; i < path.size(); ++i) start[i] = start[i - 1] + path[i - 1].used;
  for (size_t i = path.size(); i-- > 0;) {
    Node* const on_path = path[i].node;
    const auto walked = std::span(on_path->tokens).first(static_cast<size_t>(path[i].used));
    Snapshot* best = nullptr;
    Node* best_node = nullptr;
    auto consider = [&](Node* n, int64_t shared) {
      for (Snapshot& s : n->snaps) {
        if (s.used > shared || (best && s.used <= best->used)) continue;
        if (may_end({n, s.used}, start[i] + s.used)) {
          best = &s;
          best_node = n;
        }
      }
    };
    consider(on_path, path[i].used);
    for (const auto& sibling : on_path->parent->children)
      if (sibling.get() != on_path)
        consider(sibling.get(), static_cast<int64_t>(common_prefix(sibling->tokens, walked)));
    if (best) {
      path.resize(i + 1);
      path[i] = {best_node, best->used};
      return best;
    }
  }
  path.clear();
  return nullptr;
}

// The node holding the last of `tokens` when all of them are a cached path, with how many of
// its tokens they use; {nullptr, 0} otherwise.
PrefixCache::Step PrefixCache::find_path(std::span<const int32_t> tokens) const {
  const auto bt = static_cast<size_t>(pool_.block_tokens());
  const Node* node = root_.get();
  size_t pos = 0;
  while (pos < tokens.size()) {
    const auto chunk = tokens.subspan(pos, std::min(bt, tokens.size() - pos));
    const Node* next = nullptr;
    for (const auto& c : node->children)
      if (c->tokens.size() >= chunk.size() && common_prefix(c->tokens, chunk) == chunk.size() &&
          (!next || (next->block < 0 && c->block >= 0)))
        next = c.get();
    if (!next) return {nullptr, 0};
    pos += chunk.size();
    if (pos == tokens.size()) return {const_cast<Node*>(next), static_cast<int64_t>(chunk.size())};
    node = next;
  }
  return {nullptr, 0};
}

// A snapshot only on disk is wanted again: the state computed now brings it back to memory.
bool PrefixCache::wants_snapshot(std::span<const int32_t> tokens, bool anchor) {
  if (!states_ || tokens.empty()) return false;
  const Step at = find_path(tokens);
  if (!at.node) return false;
  for (Snapshot& s : at.node->snaps) {
    if (s.used != at.used) continue;
    s.anchor = s.anchor || anchor;
    return s.slot < 0;
  }
  return true;
}

void PrefixCache::add_snapshot(std::span<const int32_t> tokens, int32_t slot, bool anchor) {
  if (!states_) fail("cache: a snapshot given to a cache without recurrent state");
  const Step at = tokens.empty() ? Step{nullptr, 0} : find_path(tokens);
  if (!at.node) {
    states_->release(slot);
    return;
  }
  for (Snapshot& s : at.node->snaps) {
    if (s.used != at.used) continue;
    s.anchor = s.anchor || anchor;
    s.last_used = ++tick_;
    if (s.slot < 0)
      s.slot = slot;  // back from disk (the file stays valid: the same state)
    else
      states_->release(slot);
    return;
  }
  const auto own = std::span(at.node->tokens).first(static_cast<size_t>(at.used));
  at.node->snaps.push_back(
      {at.used, slot, anchor, ++tick_, false, chain_hash(at.node->parent->hash, own)});
  snapped_.insert(at.node);
  ++stats_.snapshots_inserted;
}

// Frees the least-recently-used snapshot slot (interval snapshots first): written to the disk
// tier when there is one (it stays in the tree), dropped otherwise.
bool PrefixCache::evict_snapshot(bool intervals_only) {
  Node* owner = nullptr;
  size_t victim = 0;
  auto older = [](const Snapshot& a, const Snapshot& b) {
    if (a.anchor != b.anchor) return !a.anchor;  // interval snapshots go first
    return a.last_used < b.last_used;
  };
  for (Node* n : snapped_)
    for (size_t i = 0; i < n->snaps.size(); ++i)
      if (n->snaps[i].slot >= 0 && !(intervals_only && n->snaps[i].anchor) &&
          (!owner || older(n->snaps[i], owner->snaps[victim]))) {
        owner = n;
        victim = i;
      }
  if (!owner) return false;
  ++stats_.snapshot_evictions;
  if (!state_disk_) {
    erase_snapshot(owner, victim);
    return true;
  }
  spill(*owner, owner->snaps[victim]);
  trim_snapshot_disk();
  return true;
}

void PrefixCache::spill(Node& n, Snapshot& s) {
  if (!s.on_disk) {
    const auto tokens = std::span(n.tokens).first(static_cast<size_t>(s.used));
    state_disk_->write({s.hash, n.parent->hash, {tokens.begin(), tokens.end()}, false, {}, {}},
                       reinterpret_cast<const uint8_t*>(states_->arena().slot(s.slot)));
    s.on_disk = true;
  }
  states_->release(s.slot);
  s.slot = -1;
}

// Keeps the snapshots' disk tier within its budget: least-recently-used files go first.
void PrefixCache::trim_snapshot_disk() {
  while (state_disk_->bytes() > state_disk_->max_bytes()) {
    Node* owner = nullptr;
    size_t victim = 0;
    for (Node* n : snapped_)
      for (size_t i = 0; i < n->snaps.size(); ++i)
        if (n->snaps[i].slot < 0 &&
            (!owner || n->snaps[i].last_used < owner->snaps[victim].last_used)) {
          owner = n;
          victim = i;
        }
    if (!owner) return;
    erase_snapshot(owner, victim);
  }
}

void PrefixCache::erase_snapshot(Node* n, size_t i) {
  const Snapshot& s = n->snaps[i];
  if (s.slot >= 0) states_->release(s.slot);
  if (s.on_disk && state_disk_) state_disk_->remove(s.hash);
  n->snaps.erase(n->snaps.begin() + static_cast<std::ptrdiff_t>(i));
  if (n->snaps.empty()) snapped_.erase(n);
}

void PrefixCache::drop_snapshots(Node* n) {
  while (!n->snaps.empty()) erase_snapshot(n, n->snaps.size() - 1);
}

// Shutdown: every snapshot in memory goes to disk, to be found by the next start.
void PrefixCache::flush_snapshots() {
  if (!state_disk_) return;
  for (Node* n : snapped_)
    for (Snapshot& s : n->snaps) {
      if (s.slot < 0 || s.on_disk) continue;
      const auto tokens = std::span(n->tokens).first(static_cast<size_t>(s.used));
      state_disk_->write({s.hash, n->parent->hash, {tokens.begin(), tokens.end()}, false, {}, {}},
                         reinterpret_cast<const uint8_t*>(states_->arena().slot(s.slot)));
      s.on_disk = true;
    }
  state_disk_->flush();
}

// After the tree is rebuilt from the blocks' disk tier: each snapshot file whose path is in it
// joins its node, on disk only; the others can never be used and are removed.
void PrefixCache::adopt_disk_snapshots() {
  std::unordered_map<uint64_t, Node*> by_hash;
  std::vector<Node*> stack = {root_.get()};
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    by_hash[n->hash] = n;
    for (const auto& c : n->children) stack.push_back(c.get());
  }
  for (DiskEntry& e : state_disk_->scan()) {
    Node* at = nullptr;
    auto parent = by_hash.find(e.parent);
    if (parent != by_hash.end() && !e.tokens.empty() && chain_hash(e.parent, e.tokens) == e.hash)
      for (const auto& c : parent->second->children)
        if (c->tokens.size() >= e.tokens.size() &&
            common_prefix(c->tokens, e.tokens) == e.tokens.size())
          at = c.get();
    if (!at) {
      state_disk_->remove(e.hash);
      continue;
    }
    at->snaps.push_back({static_cast<int64_t>(e.tokens.size()), -1, false, 0, true, e.hash});
    snapped_.insert(at);
  }
}

}  // namespace hearth
