#include "kv/kv_manager.h"

#include <algorithm>

#include "model/forward.h"
#include "util/error.h"
#include "util/system.h"

namespace hearth {

KvGeometry KvGeometry::for_model(const HParams& hp, TensorType kv_type, int64_t block_tokens) {
  return {kv_layout_for(hp, kv_type, block_tokens), hp.n_kv_layers()};
}

size_t KvGeometry::default_budget(int64_t max_seq_tokens, int max_running) const {
  // Whole blocks per running sequence: a budget of exactly max_seq_tokens tokens would round
  // down to fewer blocks than one full sequence needs.
  const auto blocks_per_seq = static_cast<size_t>(blocks_for_tokens(max_seq_tokens));
  const size_t want =
      bytes_per_block() * blocks_per_seq * static_cast<size_t>(std::max(1, max_running));
  if (auto avail = available_memory_bytes()) return std::max<size_t>(1, std::min(want, *avail / 2));
  return want;
}

KvManager::KvManager(const KvGeometry& geometry, size_t budget_bytes, const KvCacheOptions& cache)
    : geometry_(geometry),
      pool_(geometry.layout, geometry.n_layer,
            BlockPool::blocks_for_budget(geometry.layout, geometry.n_layer, budget_bytes)) {
  if (!cache.prefix_cache) return;
  if (!cache.dir.empty()) {
    const ops::KvLayout& l = geometry_.layout;
    const std::string identity = fmt::format("{}-{}-b{}-l{}", cache.model_hash, type_name(l.type),
                                             l.block_tokens, geometry_.n_layer);
    disk_ = std::make_unique<DiskTier>(cache.dir, identity, pool_.arena().block_stride(),
                                       cache.disk_max);
  }
  cache_ = std::make_unique<PrefixCache>(pool_, disk_.get());
}

KvManager::~KvManager() {
  // Sequences still here hold blocks: give them back before the cache flushes and goes.
  for (auto& [id, st] : seqs_) release(st.blocks);
  seqs_.clear();
  cache_.reset();
  disk_.reset();
}

// A text prompt is matched by text first, so a previous reply that re-tokenizes differently still
// hits; the sequence then keeps the cached tokens and tokenizes only the text after them.
int64_t KvManager::attach(int64_t id, std::span<const int32_t> tokens, const TextAttach* text,
                          int64_t max_tokens) {
  PrefixMatch m;
  if (cache_ && text) {
    const auto n_lead = static_cast<int64_t>(text->n_lead);
    m = cache_->match_text(tokens.first(text->n_lead), text->text, max_tokens);
    if (m.n_tokens() > n_lead) tokens = text->adopt(m);
    // No text hit, or all of the prompt cached (one token must still run for logits): match
    // by tokens below.
    if (m.n_tokens() <= n_lead || m.n_tokens() >= static_cast<int64_t>(tokens.size())) {
      release(m.blocks);
      m = {};
    }
  }
  if (cache_ && m.blocks.empty())
    m = cache_->match(tokens, static_cast<int64_t>(tokens.size()) - 1);
  SeqKvState& st = seqs_[id];
  release(st.blocks);
  st.blocks = std::move(m.blocks);
  return m.n_tokens();
}

std::optional<int32_t> KvManager::allocate_block() {
  std::optional<int32_t> b = pool_.allocate();
  while (!b && cache_ && cache_->evict_one()) b = pool_.allocate();
  return b;
}

bool KvManager::allocate_slots(int64_t id, int64_t n_computed, int64_t n_new) {
  SeqKvState& st = seqs_[id];
  const int64_t need = geometry_.blocks_for_tokens(n_computed + n_new);
  while (static_cast<int64_t>(st.blocks.size()) < need) {
    auto b = allocate_block();
    if (!b) return false;
    st.blocks.push_back(*b);
  }
  return make_writable(st, n_computed);
}

// The block that receives the sequence's next K/V must be its own: a block shared with the
// cache or another sequence is copied first.
bool KvManager::make_writable(SeqKvState& st, int64_t n_computed) {
  const int64_t bt = pool_.block_tokens();
  if (n_computed % bt == 0) return true;  // the next token starts a new block
  int32_t& b = st.blocks[static_cast<size_t>(n_computed / bt)];
  if (pool_.refcount(b) == 1) return true;
  auto copy = allocate_block();
  if (!copy) return false;
  pool_.copy(*copy, b);
  pool_.release(b);
  b = *copy;
  return true;
}

std::span<const int32_t> KvManager::block_table(int64_t id) const {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return {};
  return it->second.blocks;
}

bool KvManager::holds(int64_t id) const {
  return !block_table(id).empty();
}

bool KvManager::finish_turn(const SeqView& s) {
  // The last sampled token has no K/V yet; the next turn of the conversation starts with it, so
  // it runs once more (no logits), and then the whole sequence is cached. What is computed is
  // cached now, so a request matched before that row still finds it.
  if (cache_ && s.n_computed > 0 && s.n_computed + 1 == static_cast<int64_t>(s.tokens.size())) {
    cache_unfinished(s);
    return true;
  }
  cache_finished(s);
  return false;
}

// The prefix cache takes its own reference to each block; the sequence keeps its references.
void KvManager::cache_unfinished(const SeqView& s) {
  if (!cache_) return;
  const std::vector<int32_t>& blocks = seqs_[s.id].blocks;
  for (int32_t b : blocks) pool_.retain(b);
  insert(s, blocks);
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
  release(it->second.blocks);
  seqs_.erase(it);
}

// Inserts the sequence's computed tokens (and their text) into the prefix cache, which takes
// over one reference to each of `blocks`.
void KvManager::insert(const SeqView& s, const std::vector<int32_t>& blocks) {
  const auto n = static_cast<size_t>(s.n_computed);
  TokenText text;
  if (!s.text.ends.empty() && s.text.ends.size() >= n) text = {s.text.text, s.text.ends.first(n)};
  cache_->insert(s.tokens.first(n), blocks, text);
}

// Hands the sequence's blocks to the prefix cache (which keeps the computed tokens and frees
// what it does not need), or back to the pool without a cache.
void KvManager::release_to_cache(const SeqView& s) {
  auto it = seqs_.find(s.id);
  if (it == seqs_.end()) return;
  if (cache_ && s.n_computed > 0) {
    insert(s, it->second.blocks);
    it->second.blocks.clear();
  } else {
    release(it->second.blocks);
  }
  seqs_.erase(it);
}

void KvManager::release(std::vector<int32_t>& blocks) {
  for (int32_t b : blocks) pool_.release(b);
  blocks.clear();
}

int64_t KvManager::cache_only_blocks() const {
  return cache_ ? cache_->reclaimable_blocks() : 0;
}

std::optional<PrefixCacheStats> KvManager::cache_stats() const {
  if (!cache_) return std::nullopt;
  return cache_->stats();
}

DiskTierStats KvManager::disk_stats() const {
  return disk_ ? disk_->stats() : DiskTierStats{};
}

}  // namespace hearth
