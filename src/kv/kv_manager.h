// The sequence state manager: the only owner of the KV state of every sequence and of the memory
// behind it (the block pool, the prefix cache, its disk tier). The engine says which sequence
// needs room for how many tokens and when a sequence's tokens are done with; it never touches a
// block id, a refcount or the cache itself.
//
// The protocol, one call per event in a sequence's life:
//   attach()            on admission: the longest cached prefix (by text, then by tokens)
//                       becomes the sequence's first blocks (vLLM's get_computed_blocks, SGLang's
//                       match_prefix);
//   allocate_slots()    before each step: room for the step's tokens, evicting cached blocks
//                       when the pool is short, and copy-on-write of a block the next token
//                       would write that is shared with the cache or another sequence;
//   block_table()       what the forward pass addresses;
//   finish_turn()       a reply that finished: what is computed is cached now
//                       (cache_unfinished), and when only its last sampled token lacks K/V the
//                       answer is "one more cache-only token row", after which cache_finished()
//                       caches the whole turn and frees the sequence's state;
//   preempt()           the pool ran short: computed tokens go to the cache, the rest is freed,
//                       and readmission finds what is still cached;
//   free()              the contents are not trusted (a failed forward pass): freed uncached.
//
// Per-sequence state (SeqKvState) is keyed by sequence id and holds one member per layer kind.
// Full attention is the only kind today: a block table, block i holding positions
// [i*B, (i+1)*B). A new kind plugs in here, not in the scheduler:
//   - a sliding window: a second table (or a ring of ceil(W/B)+1 blocks) in SeqKvState;
//     allocate_slots() allocates the window's next block and releases the one that slid out,
//     attach()/cache_*() keep only prefixes whose window blocks are still resident;
//   - a recurrent state: a snapshot slot in SeqKvState, written by the forward pass, copied
//     into a cache-owned slot at cache_unfinished()/cache_finished() (the prefix cache then keys
//     snapshots by token position as it keys blocks) and restored by attach().
// The scheduler only ever asks "does this sequence fit N more tokens" (allocate_slots) and is told
// "one more cache-only token row" (finish_turn); both stay the same for every layer kind.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kv/block_pool.h"
#include "kv/disk_tier.h"
#include "kv/prefix_cache.h"
#include "model/hparams.h"

namespace hearth {

// The KV geometry of a model at a KV type: the block layout, bytes per token, the budget.
struct KvGeometry {
  ops::KvLayout layout;
  int64_t n_layer = 0;

  // Checks the KV type and block size against the model (model/forward.h's kv_layout_for).
  static KvGeometry for_model(const HParams& hp, TensorType kv_type, int64_t block_tokens);

  int64_t block_tokens() const { return layout.block_tokens; }
  // K+V bytes of one token, and of one block, over all layers.
  size_t bytes_per_token() const { return 2 * layout.token_bytes() * static_cast<size_t>(n_layer); }
  size_t bytes_per_block() const { return 2 * layout.block_bytes() * static_cast<size_t>(n_layer); }
  int64_t blocks_for_tokens(int64_t n_tokens) const {
    return (n_tokens + block_tokens() - 1) / block_tokens();
  }
  // Room for `max_running` full contexts of `max_seq_tokens` (whole blocks each), but never more
  // than half the memory the machine has available (weights are mapped, not counted here).
  size_t default_budget(int64_t max_seq_tokens, int max_running) const;
};

// The prefix cache behind the pool, and its disk tier.
struct KvCacheOptions {
  bool prefix_cache = true;  // reuse KV across requests (kv/prefix_cache.h)
  std::string dir;           // disk tier for evicted blocks; empty: none
  std::string model_hash;    // the model file's content hash (names the disk tier's identity)
  uint64_t disk_max = 8ull << 30;
};

// What the manager reads of a sequence: its tokens and how many of them are computed (the
// engine's progress), and their text when it has per-token text (for text anchoring).
struct SeqView {
  int64_t id = 0;
  std::span<const int32_t> tokens;  // prompt + generated
  int64_t n_computed = 0;           // tokens whose K/V are in the sequence's blocks
  TokenText text;                   // empty `ends`: no per-token text
};

// A text prompt's part of admission. Given a text match longer than the lead tokens, `adopt`
// makes the sequence's tokens the match's own tokens plus the text after it tokenized afresh,
// and returns them.
struct TextAttach {
  size_t n_lead = 0;      // tokens before the text (BOS), matched by id
  std::string_view text;  // the prompt text
  std::function<std::span<const int32_t>(const PrefixMatch&)> adopt;
};

// One sequence's cached state. See the header comment for how other layer kinds join it.
struct SeqKvState {
  std::vector<int32_t> blocks;  // full attention: the block table
};

class KvManager {
 public:
  // A pool of `budget_bytes` (at least one block), with a prefix cache when `cache` asks for it.
  KvManager(const KvGeometry& geometry, size_t budget_bytes, const KvCacheOptions& cache);
  ~KvManager();
  KvManager(const KvManager&) = delete;
  KvManager& operator=(const KvManager&) = delete;

  // On admission: the longest cached prefix of the sequence's tokens (with `text`, by text
  // first) at most `max_tokens` long becomes its first blocks; returns the tokens it covers.
  int64_t attach(int64_t id, std::span<const int32_t> tokens, const TextAttach* text,
                 int64_t max_tokens);
  // Room for `n_new` tokens after the `n_computed` the sequence has, the block the next token
  // writes its own; false when the pool (after evicting all it can) is short.
  bool allocate_slots(int64_t id, int64_t n_computed, int64_t n_new);
  std::span<const int32_t> block_table(int64_t id) const;
  bool holds(int64_t id) const;  // the sequence holds blocks

  // A reply that finished (stop or length): true when it needs one more cache-only token row
  // (cache_unfinished done; cache_finished() after that row), false when it was cached and
  // freed at once.
  bool finish_turn(const SeqView& s);
  // Caches the computed tokens; the sequence keeps its blocks and goes on writing (a block it
  // now shares with the cache is copied before its next write).
  void cache_unfinished(const SeqView& s);
  // Caches the computed tokens and frees the sequence's state (what the cache does not need
  // goes back to the pool).
  void cache_finished(const SeqView& s);
  void preempt(const SeqView& s);  // the same: readmission finds what is still cached
  void free(int64_t id);           // back to the pool uncached

  const KvGeometry& geometry() const { return geometry_; }
  const BlockPool& pool() const { return pool_; }
  const KvArena& arena() const { return pool_.arena(); }
  int32_t n_blocks() const { return pool_.n_blocks(); }
  int64_t block_tokens() const { return pool_.block_tokens(); }
  size_t bytes_per_token() const { return geometry_.bytes_per_token(); }
  bool caching() const { return cache_ != nullptr; }
  // Blocks held by the prefix cache alone (reclaimable).
  int64_t cache_only_blocks() const;
  std::optional<PrefixCacheStats> cache_stats() const;
  DiskTierStats disk_stats() const;  // zeros without a disk tier

 private:
  std::optional<int32_t> allocate_block();  // evicts cached blocks while the pool is empty
  bool make_writable(SeqKvState& st, int64_t n_computed);
  void insert(const SeqView& s, const std::vector<int32_t>& blocks);
  void release_to_cache(const SeqView& s);
  void release(std::vector<int32_t>& blocks);

  KvGeometry geometry_;
  BlockPool pool_;
  std::unique_ptr<DiskTier> disk_;
  std::unique_ptr<PrefixCache> cache_;
  std::unordered_map<int64_t, SeqKvState> seqs_;
};

}  // namespace hearth
