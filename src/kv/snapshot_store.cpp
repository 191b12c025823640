#include "kv/snapshot_store.h"

#include <utility>

#include "kv/prefix_cache_node.h"
#include "kv/state_pool.h"
#include "util/error.h"

namespace hearth {

SnapshotStore::SnapshotStore(StatePool& states, DiskTier* disk) : states_(states), disk_(disk) {
  if (disk_ && disk_->block_bytes() != states_.slot_bytes())
    fail("cache: snapshot disk tier slot size {} != state slot size {}", disk_->block_bytes(),
         states_.slot_bytes());
}

SnapshotStore::~SnapshotStore() {
  for (const auto& [node, snaps] : snaps_)
    for (const Snapshot& s : snaps)
      if (s.slot >= 0) states_.release(s.slot);
}

// A recurrent cache resumes only where a snapshot is: the path is cut back to the last one
// (that may end a match) and its state copied out before the tree's take() can evict anything.
// A snapshot that cannot be read back is dropped and the path cut back further.
bool SnapshotStore::resume(CachePath& path, const MayEnd& may_end, int32_t slot, PrefixMatch& m) {
  if (slot < 0) fail("cache: a recurrent match needs a state slot to restore into");
  int64_t shared = 0;
  for (const PathStep& st : path) shared += st.used;
  Snapshot* snap = cut(path, may_end);
  while (snap && !restore(*path.back().node, *snap, slot)) snap = cut(path, may_end);
  int64_t at = 0;
  for (const PathStep& st : path) at += st.used;
  m.n_shared = shared;
  m.state_tokens = at;
  return true;
}

// Copies snapshot `s` of node `n` into `slot` (from memory or its file); false when its file is
// gone or corrupt (the snapshot is dropped then).
bool SnapshotStore::restore(const CacheNode& n, Snapshot& s, int32_t slot) {
  if (s.slot >= 0) {
    states_.copy(slot, s.slot);
  } else {
    const auto tokens = std::span(n.tokens).first(static_cast<size_t>(s.used));
    auto* dst = reinterpret_cast<uint8_t*>(states_.arena().slot(slot));
    if (!disk_ || !disk_->read(s.hash, tokens, dst)) {
      erase(&n, static_cast<size_t>(&s - snaps_[&n].data()));
      return false;
    }
    ++disk_hits_;
  }
  s.last_used = ++tick_;
  ++hits_;
  return true;
}

// Keeps the longest prefix of `path` that ends at a snapshot; empty when there is none. At each
// level a sibling of the path's node counts too, for a snapshot inside the tokens they share: a
// request that left a cached path at a branch point took its snapshot there on its own node,
// and the next request editing the same place may walk the other branch (the state after the
// same tokens is the same state).
SnapshotStore::Snapshot* SnapshotStore::cut(CachePath& path, const MayEnd& may_end) {
  std::vector<int64_t> start(path.size(), 0);
  for (size_t i = 1; i < path.size(); ++i) start[i] = start[i - 1] + path[i - 1].used;
  for (size_t i = path.size(); i-- > 0;) {
    CacheNode* const on_path = path[i].node;
    const auto walked = std::span(on_path->tokens).first(static_cast<size_t>(path[i].used));
    Snapshot* best = nullptr;
    CacheNode* best_node = nullptr;
    auto consider = [&](CacheNode* n, int64_t shared) {
      auto it = snaps_.find(n);
      if (it == snaps_.end()) return;
      for (Snapshot& s : it->second) {
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

// A snapshot only on disk is wanted again: the state computed now brings it back to memory.
bool SnapshotStore::wants(std::span<const int32_t> tokens, bool anchor) {
  if (tokens.empty()) return false;
  const PathStep at = tree_->find_path(tokens);
  if (!at.node) return false;
  auto it = snaps_.find(at.node);
  if (it == snaps_.end()) return true;
  for (Snapshot& s : it->second) {
    if (s.used != at.used) continue;
    s.anchor = s.anchor || anchor;
    return s.slot < 0;
  }
  return true;
}

void SnapshotStore::add(std::span<const int32_t> tokens, int32_t slot, bool anchor) {
  const PathStep at = tokens.empty() ? PathStep{nullptr, 0} : tree_->find_path(tokens);
  if (!at.node) {
    states_.release(slot);
    return;
  }
  std::vector<Snapshot>& snaps = snaps_[at.node];
  for (Snapshot& s : snaps) {
    if (s.used != at.used) continue;
    s.anchor = s.anchor || anchor;
    s.last_used = ++tick_;
    if (s.slot < 0)
      s.slot = slot;  // back from disk (the file stays valid: the same state)
    else
      states_.release(slot);
    return;
  }
  const auto own = std::span(at.node->tokens).first(static_cast<size_t>(at.used));
  snaps.push_back({at.used, slot, anchor, ++tick_, false, chain_hash(at.node->parent->hash, own)});
  ++inserted_;
}

// Frees the least-recently-used snapshot slot (interval snapshots first): written to the disk
// tier when there is one (it stays in the tree), dropped otherwise.
bool SnapshotStore::evict(bool intervals_only) {
  const CacheNode* owner = nullptr;
  Snapshot* victim = nullptr;
  size_t index = 0;
  auto older = [](const Snapshot& a, const Snapshot& b) {
    if (a.anchor != b.anchor) return !a.anchor;  // interval snapshots go first
    return a.last_used < b.last_used;
  };
  for (auto& [node, snaps] : snaps_)
    for (size_t i = 0; i < snaps.size(); ++i)
      if (snaps[i].slot >= 0 && !(intervals_only && snaps[i].anchor) &&
          (!victim || older(snaps[i], *victim))) {
        owner = node;
        victim = &snaps[i];
        index = i;
      }
  if (!victim) return false;
  ++evictions_;
  if (!disk_) {
    erase(owner, index);
    return true;
  }
  write(*owner, *victim);
  states_.release(victim->slot);
  victim->slot = -1;
  trim_disk();
  return true;
}

// Writes snapshot `s` of node `n` to the disk tier unless a valid copy is there.
void SnapshotStore::write(const CacheNode& n, Snapshot& s) {
  if (s.on_disk) return;
  disk_->write(n.state_entry(s.used),
               reinterpret_cast<const uint8_t*>(states_.arena().slot(s.slot)));
  s.on_disk = true;
}

// Keeps the snapshots' disk tier within its budget: least-recently-used files go first.
void SnapshotStore::trim_disk() {
  trim_lru(
      *disk_,
      [&] {
        std::vector<std::pair<uint64_t, std::pair<const CacheNode*, size_t>>> on_disk;
        for (const auto& [node, snaps] : snaps_)
          for (size_t i = 0; i < snaps.size(); ++i)
            if (snaps[i].slot < 0) on_disk.push_back({snaps[i].last_used, {node, i}});
        return on_disk;
      },
      [&](const std::pair<const CacheNode*, size_t>& s) { erase(s.first, s.second); });
}

void SnapshotStore::erase(const CacheNode* n, size_t i) {
  auto it = snaps_.find(n);
  const Snapshot& s = it->second[i];
  if (s.slot >= 0) states_.release(s.slot);
  if (s.on_disk && disk_) disk_->remove(s.hash);
  it->second.erase(it->second.begin() + static_cast<std::ptrdiff_t>(i));
  if (it->second.empty()) snaps_.erase(it);
}

// States after tokens `to` starts with: they move with it.
void SnapshotStore::pass_on(CacheNode& from, CacheNode& to) {
  auto it = snaps_.find(&from);
  if (it == snaps_.end()) return;
  std::vector<Snapshot>& dst = snaps_[&to];
  dst.insert(dst.end(), it->second.begin(), it->second.end());
  snaps_.erase(&from);
}

void SnapshotStore::removed(CacheNode& n) {
  auto it = snaps_.find(&n);
  if (it == snaps_.end()) return;
  for (const Snapshot& s : it->second) {
    if (s.slot >= 0) states_.release(s.slot);
    if (s.on_disk && disk_) disk_->remove(s.hash);
  }
  snaps_.erase(it);
}

// Shutdown: every snapshot in memory goes to disk, to be found by the next start.
void SnapshotStore::flush() {
  if (!disk_) return;
  for (auto& [node, snaps] : snaps_)
    for (Snapshot& s : snaps)
      if (s.slot >= 0) write(*node, s);
  disk_->flush();
}

// After the tree is rebuilt from the blocks' disk tier: each snapshot file whose path is in it
// joins its node, on disk only; the others can never be used and are removed.
void SnapshotStore::adopt_disk() {
  if (!disk_) return;
  std::unordered_map<uint64_t, CacheNode*> by_hash;
  for_each_node(tree_->root(), [&](CacheNode* n) { by_hash[n->hash] = n; });
  for (DiskEntry& e : disk_->scan()) {
    CacheNode* at = nullptr;
    auto parent = by_hash.find(e.parent);
    if (parent != by_hash.end() && !e.tokens.empty() && chain_hash(e.parent, e.tokens) == e.hash)
      for (const auto& c : parent->second->children)
        if (c->tokens.size() >= e.tokens.size() &&
            common_prefix(c->tokens, e.tokens) == e.tokens.size())
          at = c.get();
    if (!at) {
      disk_->remove(e.hash);
      continue;
    }
    snaps_[at].push_back({static_cast<int64_t>(e.tokens.size()), -1, false, 0, true, e.hash});
  }
}

void SnapshotStore::add_stats(PrefixCacheStats& s) const {
  for (const auto& [node, snaps] : snaps_)
    for (const Snapshot& snap : snaps) ++(snap.slot >= 0 ? s.snapshots : s.snapshots_on_disk);
  s.snapshots_inserted = inserted_;
  s.snapshot_evictions = evictions_;
  s.snapshot_hits = hits_;
  s.snapshot_disk_hits = disk_hits_;
}

}  // namespace hearth
