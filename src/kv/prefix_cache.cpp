#include "kv/prefix_cache.h"

#include "kv/prefix_cache_node.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>

#include "kv/disk_tier.h"
#include "util/error.h"

namespace hearth {

PrefixCache::PrefixCache(BlockPool& pool, DiskTier* disk,
                         std::vector<std::unique_ptr<LayerStore>> stores)
    : pool_(pool), disk_(disk), root_(std::make_unique<Node>()), stores_(std::move(stores)) {
  for (const auto& s : stores_) s->bind(*this);
  if (disk_) {
    if (disk_->block_bytes() != pool_.arena().block_stride())
      fail("cache: disk tier block size {} != pool block size {}", disk_->block_bytes(),
           pool_.arena().block_stride());
    adopt_disk_nodes();
  }
  for (const auto& s : stores_) s->adopt_disk();
}

// The stores (members) give back their own state after this.
PrefixCache::~PrefixCache() {
  flush_to_disk();
  for (Node* n : resident_) pool_.release(n->block);
}

void PrefixCache::touch(Node* n) {
  const uint64_t t = ++tick_;
  for (; n && n != root_.get(); n = n->parent) n->last_used = t;
}

// Appends the blocks of `path` to `m` (reading back those on disk): whole blocks shared, the
// one the caller writes into next copied. Stops short where a block cannot be had.
void PrefixCache::take(const CachePath& path, PrefixMatch& m) {
  const int64_t bt = pool_.block_tokens();
  const int64_t tokens_before = m.n_tokens(), disk_before = m.disk_tokens;
  for (const Step& st : path) {
    Node& n = *st.node;
    if (n.block < 0) {
      if (!load_from_disk(n)) break;  // (n may be gone now; nothing after it is used)
      m.disk_tokens += st.used;
    }
    if (st.used == bt) {  // whole block: shared by reference
      pool_.retain(n.block);
      m.blocks.push_back(n.block);
    } else {                  // the sequence writes into this block next: a private copy
      pool_.retain(n.block);  // keep the source alive through evictions below
      std::optional<int32_t> b = pool_.allocate();
      while (!b && evict_one()) b = pool_.allocate();
      if (b)
        std::memcpy(pool_.arena().k(*b, 0), pool_.arena().k(n.block, 0),
                    pool_.arena().block_stride());
      pool_.release(n.block);
      if (!b) break;
      m.blocks.push_back(*b);
    }
    m.tokens.insert(m.tokens.end(), n.tokens.begin(), n.tokens.begin() + st.used);
    if (n.has_text && m.ends.size() + static_cast<size_t>(st.used) == m.tokens.size()) {
      for (int64_t i = 0; i < st.used; ++i)
        m.ends.push_back(static_cast<uint32_t>(m.text_bytes) + n.ends[static_cast<size_t>(i)]);
      m.text_bytes += n.text_begin(static_cast<size_t>(st.used));
    }
    touch(&n);
  }
  stats_.hit_tokens += m.n_tokens() - tokens_before;
  stats_.disk_hit_tokens += m.disk_tokens - disk_before;
}

PrefixMatch PrefixCache::match(std::span<const int32_t> tokens, int64_t max_tokens,
                               int32_t state_slot) {
  ++stats_.lookups;
  const int64_t limit = std::min<int64_t>(max_tokens, static_cast<int64_t>(tokens.size()));
  stats_.lookup_tokens += limit;
  const int64_t bt = pool_.block_tokens();
  std::vector<Step> path;
  Node* node = root_.get();
  int64_t pos = 0;
  while (pos < limit) {
    const auto want =
        tokens.subspan(static_cast<size_t>(pos), static_cast<size_t>(std::min(bt, limit - pos)));
    Node* best = nullptr;
    size_t best_len = 0;
    for (const auto& c : node->children) {
      const size_t l = common_prefix(c->tokens, want);
      if (l > best_len || (l == best_len && l > 0 && best->block < 0 && c->block >= 0)) {
        best = c.get();
        best_len = l;
      }
    }
    if (static_cast<int64_t>(best_len) < bt) {  // the whole block may be on disk all the same
      if (Node* d = probe_disk(node, want)) {
        best = d;
        best_len = static_cast<size_t>(bt);
      }
    }
    if (best_len == 0) break;
    path.push_back({best, static_cast<int64_t>(best_len)});
    pos += static_cast<int64_t>(best_len);
    if (static_cast<int64_t>(best_len) < bt) break;
    node = best;
  }
  return take_restoring(path, state_slot, [](const Step&, int64_t) { return true; });
}

// A match may end only where every store's state covers the positions after it: the path is cut
// back there (by a store that decides where matches resume, else to the last such position)
// before take() can evict anything, then each store takes its state for the blocks taken.
PrefixMatch PrefixCache::take_restoring(CachePath& path, int32_t state_slot,
                                        const MayEnd& may_end_as_given) {
  MayEnd may_end = may_end_as_given;
  if (!stores_.empty())
    may_end = [&](const Step& st, int64_t end) {
      if (!may_end_as_given(st, end)) return false;
      for (const auto& s : stores_)
        if (!s->covers(path, st, end)) return false;
      return true;
    };
  const auto length = [&] {
    int64_t n = 0;
    for (const Step& st : path) n += st.used;
    return n;
  };
  const int64_t shared = length();
  PrefixMatch m;
  bool resumed = false;
  for (const auto& s : stores_) resumed = s->resume(path, may_end, state_slot, m) || resumed;
  if (!resumed) cut_to_end(path, may_end);
  stats_.cut_tokens += shared - length();
  take(path, m);
  for (const auto& s : stores_)
    if (!s->take(path, m)) {
      give_up(m);
      break;
    }
  return m;
}

// Keeps the longest prefix of `path` that may end; empty when none (a match of 0 tokens).
void PrefixCache::cut_to_end(CachePath& path, const MayEnd& may_end) {
  int64_t start = 0;
  for (const Step& st : path) start += st.used;
  for (size_t i = path.size(); i-- > 0;) {
    start -= path[i].used;
    for (int64_t used = path[i].used; used >= 1; --used) {
      if (!may_end({path[i].node, used}, start + used)) continue;
      path.resize(i + 1);
      path[i].used = used;
      return;
    }
  }
  path.clear();
}

// A match some store's state could not be had for (a file not read back): given up, recomputed.
void PrefixCache::give_up(PrefixMatch& m) {
  for (const auto& s : stores_) s->give_back(m);
  for (int32_t b : m.blocks) pool_.release(b);
  stats_.hit_tokens -= m.n_tokens();
  stats_.disk_hit_tokens -= m.disk_tokens;
  stats_.cut_tokens += m.n_tokens();
  m.tokens.clear();
  m.blocks.clear();
  m.ends.clear();
  m.text_bytes = 0;
  m.disk_tokens = 0;
}

PathStep PrefixCache::find_path(std::span<const int32_t> tokens) const {
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

std::vector<CacheNode*> PrefixCache::insert(std::span<const int32_t> tokens,
                                            std::span<const int32_t> blocks,
                                            const TokenText& text) {
  const size_t bt = static_cast<size_t>(pool_.block_tokens());
  const bool has_text = !text.ends.empty() && text.ends.size() >= tokens.size();
  std::vector<Node*> kept;
  Node* node = root_.get();
  size_t pos = 0, bi = 0;
  while (pos < tokens.size() && bi < blocks.size()) {
    const size_t len = std::min(bt, tokens.size() - pos);
    const auto chunk = tokens.subspan(pos, len);
    const int32_t block = blocks[bi++];
    Node* existing = nullptr;
    bool covered = false;  // a longer cached block already starts with this partial chunk
    for (const auto& c : node->children) {
      if (c->tokens.size() == len && std::equal(chunk.begin(), chunk.end(), c->tokens.begin()))
        existing = c.get();
      else if (len < bt && c->tokens.size() > len && common_prefix(c->tokens, chunk) == len)
        covered = true;
    }
    if (existing) {
      if (existing->block < 0) {  // on disk only: take the identical block we hold
        existing->block = block;
        resident_.insert(existing);
      } else {
        pool_.release(block);
      }
      if (has_text && !existing->has_text) existing->set_text(text, pos);
      node = existing;
    } else if (covered) {
      pool_.release(block);
      break;
    } else {
      node = add_node(node, chunk, block, has_text ? text : TokenText{}, pos);
    }
    kept.push_back(node);
    touch(node);
    pos += len;
    if (len < bt) break;
  }
  for (; bi < blocks.size(); ++bi) pool_.release(blocks[bi]);
  return kept;
}

// A new node below `parent` for `chunk` (at the path's token `pos`), holding `block`.
PrefixCache::Node* PrefixCache::add_node(Node* parent, std::span<const int32_t> chunk,
                                         int32_t block, const TokenText& text, size_t pos) {
  auto n = std::make_unique<Node>();
  n->parent = parent;
  n->tokens.assign(chunk.begin(), chunk.end());
  n->block = block;
  n->hash = chain_hash(parent->hash, chunk);
  if (!text.ends.empty()) n->set_text(text, pos);
  supersede(parent, *n);
  if (write_through_ && disk_ && chunk.size() == static_cast<size_t>(pool_.block_tokens())) {
    disk_->write(n->disk_entry(), pool_.arena().k(block, 0));  // whole: its K/V is final
    n->on_disk = true;
  }
  resident_.insert(n.get());
  Node* raw = n.get();
  parent->children.push_back(std::move(n));
  ++stats_.nodes;
  ++stats_.inserted_blocks;
  return raw;
}

// A shorter partial child of `parent` that `n` (not yet among its children) extends is
// superseded, unless in use; the state other stores hold on it (valid for tokens `n` starts
// with) passes on to `n`.
void PrefixCache::supersede(Node* parent, Node& n) {
  for (size_t k = 0; k < parent->children.size();) {
    Node* c = parent->children[k].get();
    const bool superseded = c->tokens.size() < n.tokens.size() && c->children.empty() &&
                            common_prefix(c->tokens, n.tokens) == c->tokens.size() &&
                            (c->block < 0 || pool_.refcount(c->block) == 1);
    if (!superseded) {
      ++k;
      continue;
    }
    for (const auto& s : stores_) s->pass_on(*c, n);
    remove(c);
  }
}

void PrefixCache::remove(Node* n) {
  while (!n->children.empty()) remove(n->children.back().get());
  for (const auto& s : stores_) s->removed(*n);
  if (n->block >= 0) {
    pool_.release(n->block);
    resident_.erase(n);
  }
  if (n->on_disk && disk_) disk_->remove(n->hash);
  Node* parent = n->parent;
  auto& siblings = parent->children;
  siblings.erase(
      std::find_if(siblings.begin(), siblings.end(), [&](const auto& c) { return c.get() == n; }));
  --stats_.nodes;
}

bool PrefixCache::evict_one() {
  Node* victim = nullptr;
  for (Node* n : resident_) {
    if (n->has_resident_child() || pool_.refcount(n->block) != 1) continue;
    if (!victim || n->last_used < victim->last_used) victim = n;
  }
  if (!victim) return false;
  ++stats_.evictions;
  if (!disk_) {
    remove(victim);
    return true;
  }
  if (!victim->on_disk) {
    disk_->write(victim->disk_entry(), pool_.arena().k(victim->block, 0));
    victim->on_disk = true;
  }
  for (const auto& s : stores_) s->block_evicted(*victim);  // to their own disk tiers, if any
  pool_.release(victim->block);
  victim->block = -1;
  resident_.erase(victim);
  trim_disk();
  return true;
}

void PrefixCache::flush_to_disk() {
  for (const auto& s : stores_) s->flush();
  if (!disk_) return;
  for (Node* n : resident_) {
    if (n->on_disk) continue;
    disk_->write(n->disk_entry(), pool_.arena().k(n->block, 0));
    n->on_disk = true;
  }
  disk_->flush();
}

PrefixCacheStats PrefixCache::stats() const {
  PrefixCacheStats s = stats_;
  s.resident_blocks = static_cast<int64_t>(resident_.size());
  for (const auto& store : stores_) store->add_stats(s);
  return s;
}

int64_t PrefixCache::reclaimable_blocks() const {
  int64_t n = 0;
  for (Node* node : resident_)
    if (pool_.refcount(node->block) == 1) ++n;
  return n;
}

}  // namespace hearth
