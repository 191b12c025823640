#include "kv/prefix_cache.h"

#include "kv/prefix_cache_node.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <utility>

#include "kv/disk_tier.h"
#include "kv/state_pool.h"
#include "util/error.h"

namespace hearth {

PrefixCache::PrefixCache(BlockPool& pool, DiskTier* disk, StatePool* states, DiskTier* state_disk,
                         BlockPool* window, int64_t n_swa, DiskTier* window_disk)
    : pool_(pool),
      disk_(disk),
      root_(std::make_unique<Node>()),
      states_(states && states->enabled() ? states : nullptr),
      state_disk_(states_ && disk ? state_disk : nullptr),
      window_(n_swa > 0 ? window : nullptr),
      n_swa_(window_ ? n_swa : 0),
      window_disk_(window_ && disk ? window_disk : nullptr) {
  if (window_ && window_->block_tokens() != pool_.block_tokens())
    fail("cache: window blocks of {} tokens beside blocks of {}", window_->block_tokens(),
         pool_.block_tokens());
  if (disk_) {
    if (disk_->block_bytes() != pool_.arena().block_stride())
      fail("cache: disk tier block size {} != pool block size {}", disk_->block_bytes(),
           pool_.arena().block_stride());
    adopt_disk_nodes();
  }
  if (window_disk_) {
    if (window_disk_->block_bytes() != window_->arena().block_stride())
      fail("cache: window disk tier block size {} != window block size {}",
           window_disk_->block_bytes(), window_->arena().block_stride());
    adopt_disk_windows();
  }
  if (state_disk_) {
    if (state_disk_->block_bytes() != states_->slot_bytes())
      fail("cache: snapshot disk tier slot size {} != state slot size {}",
           state_disk_->block_bytes(), states_->slot_bytes());
    adopt_disk_snapshots();
  }
}

PrefixCache::~PrefixCache() {
  flush_to_disk();
  for (Node* n : resident_) pool_.release(n->block);
  for (Node* n : windowed_) window_->release(n->window_block);
  for (Node* n : snapped_)
    for (const Snapshot& s : n->snaps)
      if (s.slot >= 0) states_->release(s.slot);
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
      auto n = std::make_unique<Node>();
      n->parent = parent;
      n->tokens = std::move(e.tokens);
      n->has_text = e.has_text;
      n->text = std::move(e.text);
      n->ends = std::move(e.ends);
      n->hash = e.hash;
      n->on_disk = true;
      frontier.push_back(n.get());
      parent->children.push_back(std::move(n));
      ++stats_.nodes;
    }
  }
  for (size_t i = 0; i < entries.size(); ++i)
    if (!used[i]) disk_->remove(entries[i].hash);
}

void PrefixCache::touch(Node* n) {
  const uint64_t t = ++tick_;
  for (; n && n != root_.get(); n = n->parent) n->last_used = t;
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

PrefixMatch PrefixCache::take(const std::vector<Step>& path) {
  PrefixMatch m;
  const int64_t bt = pool_.block_tokens();
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
  stats_.hit_tokens += m.n_tokens();
  stats_.disk_hit_tokens += m.disk_tokens;
  return m;
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

// A whole block `block_tokens` below `parent` that the tree lacks but the disk tier has (another
// process sharing the folder wrote it after this one scanned it): adopted as an on-disk node, read
// back when a match takes it. Only where the tree's own disk nodes could be: plain attention
// caches, below the root or a whole block.
PrefixCache::Node* PrefixCache::probe_disk(Node* parent, std::span<const int32_t> block_tokens) {
  const auto bt = static_cast<size_t>(pool_.block_tokens());
  if (!disk_ || states_ || window_ || block_tokens.size() != bt) return nullptr;
  if (parent != root_.get() && parent->tokens.size() != bt) return nullptr;
  std::optional<DiskEntry> e = disk_->probe(chain_hash(parent->hash, block_tokens), block_tokens);
  if (!e || e->parent != parent->hash) return nullptr;
  auto n = std::make_unique<Node>();
  n->parent = parent;
  n->tokens = std::move(e->tokens);
  n->has_text = e->has_text;
  n->text = std::move(e->text);
  n->ends = std::move(e->ends);
  n->hash = e->hash;
  n->on_disk = true;
  Node* raw = n.get();
  parent->children.push_back(std::move(n));
  ++stats_.nodes;
  ++stats_.probed_blocks;
  return raw;
}

void PrefixCache::extend_from_disk(PrefixMatch& m, std::span<const int32_t> tokens,
                                   int64_t max_tokens) {
  const int64_t bt = pool_.block_tokens();
  const int64_t n = m.n_tokens();
  if (!disk_ || states_ || window_ || n > static_cast<int64_t>(tokens.size()) ||
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
  PrefixMatch more = take(path);
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

int64_t PrefixCache::match_text_below(const Node* node, int64_t pos, size_t off, const TextQuery& q,
                                      int& branches, std::vector<Step>& path) const {
  struct Candidate {
    Node* node;
    int64_t used;
    size_t bytes;
  };
  const int64_t bt = pool_.block_tokens();
  int64_t total = 0;
  std::vector<Candidate> found;
  while (true) {
    found.clear();
    for (const auto& c : node->children) {
      int64_t used = 0;
      size_t bytes = 0;
      for (size_t i = 0; i < c->tokens.size() && pos + used < q.max_tokens; ++i) {
        const auto g = static_cast<size_t>(pos + used);
        if (g < q.lead.size()) {  // matched by id; such tokens stand for no text of the prompt
          if (c->tokens[i] != q.lead[g] || (c->has_text && c->text_begin(i) != c->ends[i])) break;
        } else {
          if (!c->has_text) break;
          const std::string_view piece =
              std::string_view(c->text).substr(c->text_begin(i), c->ends[i] - c->text_begin(i));
          if (q.text.substr(off + bytes, piece.size()) != piece) break;
          if (q.splits && !q.splits->agrees(c->tokens[i], off + bytes, off + bytes + piece.size()))
            break;
          bytes += piece.size();
        }
        ++used;
      }
      if (used > 0) found.push_back({c.get(), used, bytes});
    }
    if (found.empty()) return total;
    const auto whole =
        std::count_if(found.begin(), found.end(), [&](const Candidate& c) { return c.used == bt; });
    if (whole > 1 && branches > 0) break;  // several blocks spell this text: try each below
    const Candidate* best = &found[0];
    for (const Candidate& c : found)
      if (c.used > best->used ||
          (c.used == best->used && best->node->block < 0 && c.node->block >= 0))
        best = &c;
    path.push_back({best->node, best->used});
    total += best->used;
    if (best->used < bt) return total;
    pos += best->used;
    off += best->bytes;
    node = best->node;
  }
  std::vector<Step> best_path;
  int64_t best_below = -1;
  for (const Candidate& c : found) {
    if (c.used != bt || branches-- <= 0) continue;
    std::vector<Step> sub{{c.node, c.used}};
    const int64_t below = match_text_below(c.node, pos + c.used, off + c.bytes, q, branches, sub);
    if (below > best_below) {
      best_below = below;
      best_path = std::move(sub);
    }
  }
  path.insert(path.end(), best_path.begin(), best_path.end());
  return total + bt + best_below;
}

bool PromptSplits::agrees(int32_t token, size_t begin, size_t end) const {
  // The first special span of the prompt that ends after `begin`.
  const auto it = std::upper_bound(
      specials.begin(), specials.end(), begin,
      [](size_t at, const std::pair<uint32_t, uint32_t>& s) { return at < s.second; });
  if (is_special && is_special(token))
    return it != specials.end() && it->first == begin && it->second == end;
  // A plain token (or the empty text of held-back bytes) must not touch a special one's bytes.
  return it == specials.end() || it->first >= std::max(end, begin + 1);
}

bool PromptSplits::token_ends_at(size_t at) const {
  return std::binary_search(token_ends.begin(), token_ends.end(), static_cast<uint32_t>(at));
}

PrefixMatch PrefixCache::match_text(std::span<const int32_t> lead, std::string_view text,
                                    int64_t max_tokens, int32_t state_slot,
                                    const PromptSplits* splits) {
  ++stats_.lookups;
  std::vector<Step> path;
  int branches = 64;
  int64_t pos =
      match_text_below(root_.get(), 0, 0, {lead, text, max_tokens, splits}, branches, path);
  // The text each position of the path ends at (lead tokens stand for none).
  std::vector<size_t> byte_at{0};
  for (const Step& st : path)
    for (size_t i = 0; i < static_cast<size_t>(st.used); ++i)
      byte_at.push_back(byte_at.back() + (byte_at.size() - 1 < lead.size()
                                              ? 0
                                              : st.node->ends[i] - st.node->text_begin(i)));
  // A match may not end on a token without text (bytes of an incomplete character, emitted
  // with a later token): the text after it would repeat them. With the prompt's splits, it ends
  // where a cold token does.
  auto may_end = [&](const Step& st, int64_t end) {
    const auto i = static_cast<size_t>(st.used - 1);
    if (end - 1 < static_cast<int64_t>(lead.size())) return true;
    return st.node->text_begin(i) != st.node->ends[i] &&
           (!splits || splits->token_ends_at(byte_at[static_cast<size_t>(end)]));
  };
  while (!path.empty() && !may_end(path.back(), pos)) {
    --pos;
    if (--path.back().used == 0) path.pop_back();
  }
  PrefixMatch m = take_restoring(path, state_slot, may_end);
  stats_.lookup_tokens += m.n_tokens();  // the rest is counted by the caller as new
  return m;
}

void PrefixCache::insert(std::span<const int32_t> tokens, std::span<const int32_t> blocks,
                         const TokenText& text, std::span<const int32_t> window) {
  const size_t bt = static_cast<size_t>(pool_.block_tokens());
  const bool has_text = !text.ends.empty() && text.ends.size() >= tokens.size();
  Node* node = root_.get();
  size_t pos = 0, bi = 0;
  while (pos < tokens.size() && bi < blocks.size()) {
    const size_t len = std::min(bt, tokens.size() - pos);
    const auto chunk = tokens.subspan(pos, len);
    const int32_t window_block = bi < window.size() ? window[bi] : -1;
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
      if (window_block >= 0) window_->release(window_block);
      break;
    } else {
      // A shorter partial sibling that this chunk extends is superseded, unless in use; its
      // snapshots (states after tokens this chunk starts with) move to the new node.
      std::vector<Snapshot> moved;
      int32_t moved_window = -1;  // and its window block, valid for its tokens
      int64_t moved_window_used = 0;
      for (size_t k = 0; k < node->children.size();) {
        Node* c = node->children[k].get();
        const bool superseded = c->tokens.size() < len && c->children.empty() &&
                                common_prefix(c->tokens, chunk) == c->tokens.size() &&
                                (c->block < 0 || pool_.refcount(c->block) == 1);
        if (!superseded) {
          ++k;
          continue;
        }
        moved.insert(moved.end(), c->snaps.begin(), c->snaps.end());
        c->snaps.clear();
        snapped_.erase(c);
        if (c->window_block >= 0 && c->window_used > moved_window_used) {
          if (moved_window >= 0) window_->release(moved_window);
          moved_window = std::exchange(c->window_block, -1);
          moved_window_used = c->window_used;
          windowed_.erase(c);
        }
        remove(c);
      }
      auto n = std::make_unique<Node>();
      n->snaps = std::move(moved);
      if (!n->snaps.empty()) snapped_.insert(n.get());
      n->parent = node;
      n->tokens.assign(chunk.begin(), chunk.end());
      n->block = block;
      n->hash = chain_hash(node->hash, chunk);
      if (has_text) n->set_text(text, pos);
      if (write_through_ && disk_ && len == bt) {  // whole: its K/V is final
        disk_->write(n->disk_entry(), pool_.arena().k(block, 0));
        n->on_disk = true;
      }
      resident_.insert(n.get());
      Node* raw = n.get();
      node->children.push_back(std::move(n));
      ++stats_.nodes;
      ++stats_.inserted_blocks;
      node = raw;
      adopt_window(node, moved_window, moved_window_used);
    }
    adopt_window(node, window_block, static_cast<int64_t>(len));
    touch(node);
    pos += len;
    if (len < bt) break;
  }
  for (size_t i = bi; i < window.size(); ++i)
    if (window[i] >= 0) window_->release(window[i]);
  for (; bi < blocks.size(); ++bi) pool_.release(blocks[bi]);
}

void PrefixCache::remove(Node* n) {
  while (!n->children.empty()) remove(n->children.back().get());
  if (!n->snaps.empty()) drop_snapshots(n);
  drop_window(n);
  if (n->window_on_disk) window_disk_->remove(n->hash);
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
  evict_window(victim);  // to its own disk tier, if any
  pool_.release(victim->block);
  victim->block = -1;
  resident_.erase(victim);
  // Keep the disk tier within its budget: drop the least-recently-used leaves there.
  while (disk_->bytes() > disk_->max_bytes()) {
    Node* old = nullptr;
    std::vector<Node*> stack = {root_.get()};
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      for (const auto& c : n->children) stack.push_back(c.get());
      if (n != root_.get() && n->block < 0 && n->children.empty() &&
          (!old || n->last_used < old->last_used))
        old = n;
    }
    if (!old) break;
    remove(old);
  }
  return true;
}

void PrefixCache::flush_to_disk() {
  flush_snapshots();
  flush_windows();
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
  s.window_blocks = static_cast<int64_t>(windowed_.size());
  for (const Node* n : snapped_)
    for (const Snapshot& snap : n->snaps) ++(snap.slot >= 0 ? s.snapshots : s.snapshots_on_disk);
  return s;
}

int64_t PrefixCache::reclaimable_blocks() const {
  int64_t n = 0;
  for (Node* node : resident_)
    if (pool_.refcount(node->block) == 1) ++n;
  return n;
}

}  // namespace hearth
