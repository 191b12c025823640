#include "kv/kv_manager.h"

#include <algorithm>

#include "kv/snapshot_store.h"
#include "kv/window_store.h"
#include "model/forward.h"
#include "util/error.h"
#include "util/system.h"

namespace hearth {

KvGeometry KvGeometry::for_model(const HParams& hp, TensorType kv_type, int64_t block_tokens) {
  KvGeometry g{kv_layout_for(hp, kv_type, block_tokens), hp.n_full_attention_layers(),
               StateArena::layout_for(hp)};
  g.n_window_layer = hp.n_window_layers();
  g.n_swa = g.n_window_layer > 0 ? hp.n_swa : 0;
  if (g.n_window_layer > 0 && g.n_swa <= 0) fail("KV: sliding-window layers without a window");
  return g;
}

int64_t KvGeometry::window_blocks_wanted(int max_sequences, int64_t step_tokens) const {
  if (n_window_layer == 0) return 0;
  const int64_t per_seq = blocks_for_tokens(n_swa) + 2;  // a chunk may straddle one more
  return 2 * (std::max(1, max_sequences) * per_seq +
              blocks_for_tokens(std::max<int64_t>(1, step_tokens)));
}

KvGeometry::Split KvGeometry::split(size_t budget, int max_sequences, int64_t step_tokens) const {
  if (n_window_layer == 0) return {BlockPool::blocks_for_budget(layout, n_layer, budget), 0};
  const size_t main = bytes_per_block(), window = window_bytes_per_block();
  const size_t proportional = budget / (main + window);
  const auto wanted = static_cast<size_t>(window_blocks_wanted(max_sequences, step_tokens));
  const size_t w = std::clamp<size_t>(std::min(wanted, proportional), 1, 1u << 30);
  const size_t rest = budget > w * window ? budget - w * window : 0;
  // Every layer sliding-window (a gemma3 shorter than its 6-layer period): the main blocks hold
  // no memory but still number the positions; as many as the budget would give all layers.
  if (main == 0)
    return {static_cast<int32_t>(std::clamp<size_t>(budget / window, 1, 1u << 24)),
            static_cast<int32_t>(w)};
  return {BlockPool::blocks_for_budget(layout, n_layer, rest), static_cast<int32_t>(w)};
}

size_t default_snapshot_bytes(size_t kv_budget, size_t slot_bytes, int max_sequences) {
  return std::max(kv_budget / 2, slot_bytes * static_cast<size_t>(std::max(1, max_sequences)));
}

namespace {

int32_t snapshot_slots(const KvGeometry& g, size_t kv_budget, const KvCacheOptions& o) {
  const size_t slot = g.state.slot_bytes();
  if (slot == 0 || !o.prefix_cache) return 0;
  const size_t bytes = o.snapshot_bytes > 0
                           ? o.snapshot_bytes
                           : default_snapshot_bytes(kv_budget, slot, o.max_sequences);
  return static_cast<int32_t>(std::min<size_t>(bytes / slot, 1u << 30));
}

}  // namespace

size_t KvGeometry::default_budget(int64_t max_seq_tokens, int max_running,
                                  int64_t step_tokens) const {
  // Whole blocks per running sequence: a budget of exactly max_seq_tokens tokens would round
  // down to fewer blocks than one full sequence needs.
  const auto blocks_per_seq = static_cast<size_t>(blocks_for_tokens(max_seq_tokens));
  const auto window_blocks =
      static_cast<size_t>(window_blocks_wanted(2 * std::max(1, max_running), step_tokens));
  const size_t want =
      bytes_per_block() * blocks_per_seq * static_cast<size_t>(std::max(1, max_running)) +
      window_bytes_per_block() * window_blocks;
  if (auto avail = available_memory_bytes()) return std::max<size_t>(1, std::min(want, *avail / 2));
  return want;
}

KvManager::KvManager(const KvGeometry& geometry, size_t budget_bytes, const KvCacheOptions& cache)
    : geometry_(geometry),
      options_(cache),
      split_(geometry.split(budget_bytes, cache.max_sequences, cache.step_tokens)),
      pool_(geometry.layout, geometry.n_layer, split_.main_blocks),
      states_(geometry.state, std::max(1, cache.max_sequences),
              snapshot_slots(geometry, budget_bytes, cache)),
      arena_(pool_.arena()) {
  arena_.state = states_.arena();
  if (split_.window_blocks > 0) {
    window_pool_ =
        std::make_unique<BlockPool>(geometry.layout, geometry.n_window_layer, split_.window_blocks);
    arena_.window = window_pool_->arena();
  }
  if (options_.snapshot_interval <= 0) fail("KV: the snapshot interval must be positive");
  if (!cache.prefix_cache) return;
  if (!cache.dir.empty()) open_disk_tiers(cache);
  open_cache(cache);
}

// The blocks' disk tier and, beside it, one per other kind of layer state the cache keeps.
void KvManager::open_disk_tiers(const KvCacheOptions& cache) {
  const ops::KvLayout& l = geometry_.layout;
  const std::string identity = fmt::format("{}-{}-b{}-l{}", cache.model_hash, type_name(l.type),
                                           l.block_tokens, geometry_.n_layer);
  // Hybrid models: the snapshots (whose contents also depend on the KV type, through the
  // attention layers before them) get their own files and half of the disk budget.
  // Window blocks (sliding-window layers) likewise, beside the blocks'.
  const uint64_t share = cache.disk_max / (1 + (recurrent() ? 1 : 0) + (window_pool_ ? 1 : 0));
  disk_ = std::make_unique<DiskTier>(cache.dir, identity, pool_.arena().block_stride(), share);
  if (recurrent())
    state_disk_ = std::make_unique<DiskTier>(
        cache.dir, fmt::format("{}-state-f{}", identity, geometry_.state.slot_floats),
        states_.slot_bytes(), share);
  if (window_pool_)
    window_disk_ = std::make_unique<DiskTier>(
        cache.dir, fmt::format("{}-window-l{}", identity, geometry_.n_window_layer),
        window_pool_->arena().block_stride(), share);
}

// The prefix cache over the pool, with one store per kind of layer besides full attention
// (kv/layer_store.h), which the cache owns and this manager also calls on (snapshots taken,
// window blocks evicted under their own pool's pressure).
void KvManager::open_cache(const KvCacheOptions& cache) {
  std::vector<std::unique_ptr<LayerStore>> stores;
  if (recurrent()) {
    auto s = std::make_unique<SnapshotStore>(states_, state_disk_.get());
    snapshots_ = s.get();
    stores.push_back(std::move(s));
  }
  if (window_pool_) {
    auto s = std::make_unique<WindowStore>(*window_pool_, geometry_.n_swa, window_disk_.get());
    windows_ = s.get();
    stores.push_back(std::move(s));
  }
  cache_ = std::make_unique<PrefixCache>(pool_, disk_.get(), std::move(stores));
  cache_->set_write_through(cache.write_through);
}

KvManager::~KvManager() {
  // Sequences still here hold blocks: give them back before the cache flushes and goes.
  for (auto& [id, st] : seqs_) release(st);
  seqs_.clear();
  cache_.reset();
  disk_.reset();
  window_disk_.reset();
  state_disk_.reset();
}

// A text prompt is matched by text first, so a previous reply that re-tokenizes differently still
// hits; the sequence then keeps the cached tokens and tokenizes only the text after them.
TextHit KvManager::match_text(int64_t id, std::span<const int32_t> lead, std::string_view text,
                              int64_t max_tokens, const PromptSplits* splits) {
  SeqKvState& st = seqs_[id];
  release(st);
  if (!cache_) return {};
  ensure_state_slot(st, 0);  // recurrent layers: a snapshot is restored into it
  PrefixMatch m = cache_->match_text(lead, text, max_tokens, st.state_slot, splits);
  if (m.n_tokens() <= static_cast<int64_t>(lead.size())) {
    release_match(m);
    return {};
  }
  TextHit hit{m.tokens, m.ends, m.text_bytes};
  st.text_match = std::move(m);
  return hit;
}

int64_t KvManager::attach(int64_t id, std::span<const int32_t> tokens, int64_t max_tokens) {
  SeqKvState& st = seqs_[id];
  PrefixMatch m = std::move(st.text_match);
  st.text_match = {};
  if (m.blocks.empty()) release(st);  // a text hit holds the sequence's slot already
  ensure_state_slot(st, 0);           // recurrent layers: a snapshot is restored into it
  // All of the prompt cached by text: one token must still run for logits; match by tokens.
  if (m.n_tokens() >= static_cast<int64_t>(tokens.size())) release_match(m);
  const int64_t limit = std::min(max_tokens, static_cast<int64_t>(tokens.size()) - 1);
  if (cache_ && m.blocks.empty()) {
    m = cache_->match(tokens, limit, st.state_slot);
  } else if (cache_) {
    // A text hit may stop where this process's tree does while a process sharing the cache
    // folder wrote the blocks after it (a conversation moved here): they count too.
    cache_->extend_from_disk(m, tokens, limit);
  }
  adopt_match(st, m, tokens);
  return m.n_tokens();
}

// The match becomes the sequence's first blocks (and, on recurrent layers, its state).
void KvManager::adopt_match(SeqKvState& st, PrefixMatch& m, std::span<const int32_t> tokens) {
  const int32_t slot = st.state_slot;
  if (recurrent()) {
    // The state must cover exactly the matched tokens; a match cut short (a block that could
    // not be read back) recomputes from the start.
    if (m.n_tokens() > 0 && m.state_tokens != m.n_tokens()) release_match(m);
    if (m.n_tokens() == 0)
      std::fill_n(states_.arena().slot(slot), states_.arena().slot_floats, 0.f);
    if (m.n_shared > m.n_tokens()) {
      st.anchors.push_back(m.n_shared);
      st.branch_point = m.n_shared;
    }
    st.anchors.push_back(static_cast<int64_t>(tokens.size()) - 1);
  }
  st.blocks = std::move(m.blocks);
  st.window = std::move(m.window_blocks);
  // Windows: the prompt's path is cached once computed, while its tail still holds its window.
  if (window_pool_) st.cache_at = static_cast<int64_t>(tokens.size());
}

// A sequence of a recurrent model holds a working slot from its first token on (zeros: the
// state before any token); one that computed tokens without a slot would have lost its state.
bool KvManager::ensure_state_slot(SeqKvState& st, int64_t n_computed) {
  if (!recurrent() || st.state_slot >= 0) return true;
  if (n_computed > 0) fail("KV: a sequence computed {} tokens without a state slot", n_computed);
  std::optional<int32_t> s = states_.allocate_working();
  if (!s)
    fail("KV: all {} working state slots are taken (max_sequences too small)",
         states_.n_slots() - states_.snapshot_capacity());
  st.state_slot = *s;
  return true;
}

std::optional<int32_t> KvManager::allocate_block() {
  std::optional<int32_t> b = pool_.allocate();
  while (!b && cache_ && cache_->evict_one()) b = pool_.allocate();
  return b;
}

std::optional<int32_t> KvManager::allocate_window_block() {
  std::optional<int32_t> b = window_pool_->allocate();
  while (!b && windows_ && windows_->evict_one()) b = window_pool_->allocate();
  return b;
}

bool KvManager::allocate_slots(int64_t id, int64_t n_computed, int64_t n_new) {
  SeqKvState& st = seqs_[id];
  ensure_state_slot(st, n_computed);
  const int64_t need = geometry_.blocks_for_tokens(n_computed + n_new);
  while (static_cast<int64_t>(st.blocks.size()) < need) {
    auto b = allocate_block();
    if (!b) return false;
    st.blocks.push_back(*b);
  }
  if (!make_writable(st.blocks, n_computed, false)) return false;
  return !window_pool_ || slide_window(st, n_computed, need);
}

// Releases the window blocks no query from position n_computed on sees (the header comment's
// rule), then allocates those of the step's tokens.
bool KvManager::slide_window(SeqKvState& st, int64_t n_computed, int64_t need) {
  const int64_t bt = pool_.block_tokens();
  const int64_t first_seen = std::max<int64_t>(0, n_computed - geometry_.n_swa + 1);
  for (size_t i = 0; i < st.window.size() && static_cast<int64_t>(i + 1) * bt <= first_seen; ++i) {
    if (st.window[i] >= 0) window_pool_->release(st.window[i]);
    st.window[i] = -1;
  }
  while (static_cast<int64_t>(st.window.size()) < need) {
    if (static_cast<int64_t>(st.window.size() + 1) * bt <= first_seen) {
      st.window.push_back(-1);
      continue;
    }
    auto b = allocate_window_block();
    if (!b) return false;
    st.window.push_back(*b);
  }
  return make_writable(st.window, n_computed, true);
}

// The block that receives the sequence's next K/V must be its own: a block shared with the
// cache or another sequence is copied first.
bool KvManager::make_writable(std::vector<int32_t>& table, int64_t n_computed, bool window) {
  const int64_t bt = pool_.block_tokens();
  if (n_computed % bt == 0) return true;  // the next token starts a new block
  BlockPool& pool = window ? *window_pool_ : pool_;
  int32_t& b = table[static_cast<size_t>(n_computed / bt)];
  if (b < 0) fail("KV: the block of position {} is not held", n_computed);
  if (pool.refcount(b) == 1) return true;
  auto copy = window ? allocate_window_block() : allocate_block();
  if (!copy) return false;
  pool.copy(*copy, b);
  pool.release(b);
  b = *copy;
  return true;
}

void KvManager::trim(int64_t id, int64_t n_tokens) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return;
  SeqKvState& st = it->second;
  const auto keep = static_cast<size_t>(geometry_.blocks_for_tokens(n_tokens));
  while (st.blocks.size() > keep) {
    pool_.release(st.blocks.back());
    st.blocks.pop_back();
  }
  while (st.window.size() > keep) {
    if (st.window.back() >= 0) window_pool_->release(st.window.back());
    st.window.pop_back();
  }
}

std::span<const int32_t> KvManager::block_table(int64_t id) const {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return {};
  return it->second.blocks;
}

std::span<const int32_t> KvManager::window_table(int64_t id) const {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return {};
  return it->second.window;
}

bool KvManager::holds(int64_t id) const {
  return !block_table(id).empty();
}

int32_t KvManager::state_slot(int64_t id) const {
  auto it = seqs_.find(id);
  return it == seqs_.end() ? -1 : it->second.state_slot;
}

int64_t KvManager::snapshot_interval() const {
  // Twice as sparse at each halving of the free snapshot slots: the finest interval while less
  // than half the store is used, and aligned positions, so the sparser ones are a subset.
  int64_t interval = options_.snapshot_interval;
  const int64_t free = states_.snapshot_capacity() - states_.n_snapshots();
  for (int64_t t = states_.snapshot_capacity() / 2; t > 0 && free < t; t /= 2) interval *= 2;
  return interval;
}

int64_t KvManager::snapshot_stop(int64_t id, int64_t n_computed) const {
  if (!cache_ || !recurrent()) return 0;
  const int64_t interval = snapshot_interval();
  int64_t stop = (n_computed / interval + 1) * interval;
  auto it = seqs_.find(id);
  if (it != seqs_.end())
    for (int64_t a : it->second.anchors)
      if (a > n_computed) stop = std::min(stop, a);
  return stop;
}

void KvManager::computed(const SeqView& s) {
  if (!cache_ || s.n_computed <= 0) return;
  auto it = seqs_.find(s.id);
  if (it == seqs_.end()) return;
  if (it->second.cache_at > 0 && s.n_computed >= it->second.cache_at) {
    it->second.cache_at = 0;
    cache_path(s, true);  // the prompt's tail keeps its window blocks (header comment)
  }
  if (!recurrent()) return;
  std::vector<int64_t>& anchors = it->second.anchors;
  const bool wanted = std::find(anchors.begin(), anchors.end(), s.n_computed) != anchors.end();
  std::erase_if(anchors, [&](int64_t a) { return a <= s.n_computed; });
  // Only the branch point is an anchor; the prompt's last position but one serves a repeat of
  // the same prompt (a regenerated reply) and is kept like an interval snapshot.
  if (wanted || s.n_computed % snapshot_interval() == 0)
    cache_path(s, s.n_computed == it->second.branch_point);
}

bool KvManager::finish_turn(const SeqView& s) {
  // The last sampled token has no K/V yet; the next turn of the conversation starts with it, so
  // it runs once more (no logits), and then the whole sequence is cached. What is computed is
  // cached now, so a request matched before that row still finds it.
  if (cache_ && s.n_computed > 0 && s.n_computed + 1 == static_cast<int64_t>(s.tokens.size())) {
    // Not an anchor yet: the completing row's snapshot after the whole reply is where the next
    // turn resumes; this one becomes an anchor if that row never runs (cache_finished here).
    cache_path(s, false);
    return true;
  }
  cache_finished(s);
  return false;
}

void KvManager::cache_unfinished(const SeqView& s) {
  cache_path(s, true);
}

// The prefix cache takes its own reference to each block; the sequence keeps its references
// (and, with recurrent layers, its working slot, of which the cache keeps a snapshot).
void KvManager::cache_path(const SeqView& s, bool anchor) {
  if (!cache_) return;
  const SeqKvState& st = seqs_[s.id];
  for (int32_t b : st.blocks) pool_.retain(b);
  for (int32_t b : st.window)
    if (b >= 0) window_pool_->retain(b);
  insert(s, st.blocks, st.window);
  snapshot(s, st.state_slot, anchor);
}

// Keeps a copy of the working state after the sequence's computed tokens at the end of their
// cached path (inserted just before), evicting older snapshots beyond the budget.
void KvManager::snapshot(const SeqView& s, int32_t working, bool anchor) {
  if (!recurrent() || working < 0 || s.n_computed <= 0) return;
  const auto path = s.tokens.first(static_cast<size_t>(s.n_computed));
  if (!snapshots_->wants(path, anchor)) return;
  std::optional<int32_t> slot = states_.allocate_snapshot();
  // An interval snapshot never pushes out an anchor: it is skipped when only anchors are left.
  while (!slot && snapshots_->evict(!anchor)) slot = states_.allocate_snapshot();
  if (!slot) return;
  states_.copy(*slot, working);
  snapshots_->add(path, *slot, anchor);
}

void KvManager::cache_finished(const SeqView& s) {
  release_to_cache(s);
}

void KvManager::preempt(const SeqView& s) {
  release_to_cache(s);
}

void KvManager::free(int64_t id) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return;
  release(it->second);
  seqs_.erase(it);
}

// Inserts the sequence's computed tokens (and their text) into the prefix cache, which takes
// over one reference to each of `blocks`.
void KvManager::insert(const SeqView& s, const std::vector<int32_t>& blocks,
                       const std::vector<int32_t>& window) {
  const auto n = static_cast<size_t>(s.n_computed);
  TokenText text;
  if (!s.text.ends.empty() && s.text.ends.size() >= n) text = {s.text.text, s.text.ends.first(n)};
  const std::vector<CacheNode*> nodes = cache_->insert(s.tokens.first(n), blocks, text);
  if (windows_) windows_->adopt(nodes, window);
}

// Hands the sequence's blocks to the prefix cache (which keeps the computed tokens and frees
// what it does not need), or back to the pool without a cache.
void KvManager::release_to_cache(const SeqView& s) {
  auto it = seqs_.find(s.id);
  if (it == seqs_.end()) return;
  if (cache_ && s.n_computed > 0) {
    insert(s, it->second.blocks, it->second.window);
    it->second.blocks.clear();
    it->second.window.clear();
    snapshot(s, it->second.state_slot, true);
  }
  release(it->second);
  seqs_.erase(it);
}

void KvManager::release(std::vector<int32_t>& blocks) {
  for (int32_t b : blocks) pool_.release(b);
  blocks.clear();
}

void KvManager::release_match(PrefixMatch& m) {
  release(m.blocks);
  for (int32_t b : m.window_blocks)
    if (b >= 0) window_pool_->release(b);
  m = {};
}

void KvManager::release(SeqKvState& st) {
  release_match(st.text_match);
  release(st.blocks);
  for (int32_t b : st.window)
    if (b >= 0) window_pool_->release(b);
  st.window.clear();
  st.cache_at = 0;
  if (st.state_slot >= 0) states_.release(st.state_slot);
  st.state_slot = -1;
  st.anchors.clear();
  st.branch_point = 0;
}

int64_t KvManager::cache_only_blocks() const {
  return cache_ ? cache_->reclaimable_blocks() : 0;
}

int64_t KvManager::cache_only_window_blocks() const {
  return windows_ ? windows_->reclaimable() : 0;
}

std::optional<PrefixCacheStats> KvManager::cache_stats() const {
  if (!cache_) return std::nullopt;
  return cache_->stats();
}

DiskTierStats KvManager::disk_stats() const {
  return disk_ ? disk_->stats() : DiskTierStats{};
}

DiskTierStats KvManager::snapshot_disk_stats() const {
  return state_disk_ ? state_disk_->stats() : DiskTierStats{};
}

}  // namespace hearth
