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
// Per-sequence state (SeqKvState) is keyed by sequence id and holds one member per layer kind:
//   - attention layers: a block table, block i holding positions [i*B, (i+1)*B);
//   - sliding-window layers (gemma3): a window table indexed like the block table, in a second
//     pool of blocks holding only those layers' K/V (KvArena::window); the main blocks then
//     hold only the full-attention layers. allocate_slots() allocates the window blocks of the
//     step's tokens and releases each one no later query sees: block b (positions
//     [bB, bB+B)) once bB+B-1 < n_computed - n_swa + 1, n_computed the position of the step's
//     first new token (the attention kernel never reads a row before a query's window:
//     ops/attention_kernels.h), leaving -1 in the table. See "Sliding windows" below;
//   - recurrent layers (hybrid models): a working slot of the state pool (kv/state_pool.h),
//     held from the first allocation to release (all zeros at position 0), which the forward
//     pass reads and updates in place (state_slot()). The prefix cache keeps snapshots of it by
//     token position (kv/snapshot_store.h) and attach() restores the last one at or before the
//     match: the match is cut back there, so a hit resumes exactly.
//
// Snapshot placement (hybrid models with the prefix cache), chosen so that every place a later
// request resumes from is covered without recomputing the whole prefix:
//   - anchors: at the end of every cached prompt and reply (cache_unfinished/cache_finished/
//     preempt: a finished reply's last token runs as a completing row, so the next turn resumes
//     after all of it) and at the branch point where an admitted request leaves the cached path
//     (taken while it prefills, for later requests sharing that prefix);
//   - at the last prompt token minus one (a repeated prompt still runs its last token for
//     logits, so it resumes at n_prompt-1): kept as an interval snapshot, since only a repeat
//     of the same prompt (a regenerated reply) uses it;
//   - intervals: every `snapshot_interval` tokens (16 by default) while the snapshot store is
//     less than half full, then twice as sparse at each halving of what is free (32 below 3/4,
//     64 below 7/8, ...), positions aligned so sparser ones are a subset; taken in prefill and
//     decode alike. Snapshots are evicted LRU, interval ones before anchors, and an interval
//     snapshot is skipped rather than evict an anchor, so a flood of them from one long prompt
//     never pushes out where conversations resume.
//   Measured, engine end to end (bench/chat_replay, T=8 turns of ~85 new tokens and 64-token
//   replies after a 300-token system prompt, on `hearth synth --preset qwen3.5-0.8b` Q8_0:
//   20.2 MB of state per snapshot, 12 KiB of F16 KV per token; default budgets, which hold 9
//   snapshots = 182 MB): S=1 prefilled/new 895/895 = 1.000, S=4 round-robin 2927/2902 = 1.009;
//   the store stays full (16.8-22.3 MB per 1,000 cached tokens, the bench's cold-prefill probes
//   included) and ~100-150 snapshots are taken per run (20 MB copies: well under 1% of the
//   wall time). Before interval snapshots were barred from evicting anchors, S=4 gave 6.35.
//   Through the KV manager alone (tests/kv/snapshot_placement_test.cpp, same shapes, 16 slots):
//   prefilled/new 1.000 for S=1; 81 MB per 1,000 tokens with 4,000 tokens cached; on the
//   synthetic qwen35's shape (0.22 MB per snapshot) 39 snapshots = 2.1 MB per 1,000 tokens.
//   A prefill chunk must end exactly at a snapshot position: snapshot_stop() is the scheduler's
//   plain fact (SeqFacts::stop_at), and after each step computed() takes the snapshot when the
//   sequence lands on one (inserting its path into the cache, like cache_unfinished).
//   Snapshots have their own budget (KvCacheOptions::snapshot_bytes) and LRU eviction, interval
//   snapshots before anchors. With a cache directory they have their own disk tier beside the
//   blocks' (DIR/<blocks' identity>-state-f<slot floats>/, half of disk_max each): an evicted
//   snapshot is written there and read back on a hit, and all are written at shutdown.
//
// Sliding windows (models with sliding-window layers), the memory rule:
//   - a running sequence holds at most ceil(n_swa/B)+1 window blocks while it decodes, and
//     ceil((n_swa+n-1)/B)+1 during a prefill chunk of n tokens, whatever its length; its main
//     blocks (full-attention layers only) grow with it as before;
//   - the prefix cache keeps the window blocks a sequence still holds when its path is cached:
//     at the end of its prompt (computed() caches the path once the prompt is computed, before
//     decoding slides the prompt's tail out) and at the end of its reply (finish/preempt). A
//     match ending at p needs the window blocks of [p - n_swa + 1, p) and is cut back to the
//     largest p that has them (or 0). So a continuation (p = the reply's end), a repeat
//     (p = n_prompt - 1) and an edit at or after the start of the prompt's last prefill chunk
//     (at most step_tokens before its end) hit fully; an earlier branch point recomputes from
//     the last covered position, or from 0. With a cache directory, window blocks have their
//     own disk tier (DIR/<blocks' identity>-window-l<layers>/, a share of disk_max beside the
//     blocks' and the snapshots'): an evicted window block is written there and read back on a
//     hit, and all are written at shutdown.
//   - budget: the window pool takes `window_blocks_wanted` blocks (room for max_sequences
//     windows with a prefill chunk, twice: the second half for cached tails), never more than
//     its proportional share of the budget (as many blocks as the main pool); the main pool
//     gets the rest. Gemma-3-1B's shape (F16, B=32, n_swa=512, 4 running, 8 sequences): the
//     window pool is 290 blocks (9,280 tokens of its 22 window layers).
//   Window blocks are evicted from the cache LRU on the window pool's own pressure.
// The scheduler only ever asks "does this sequence fit N more tokens" (allocate_slots), is told
// "one more cache-only token row" (finish_turn) and "end the chunk at" (snapshot_stop); all stay
// the same for every layer kind.
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
#include "kv/state_pool.h"
#include "model/hparams.h"

namespace hearth {

class SnapshotStore;
class WindowStore;

// The KV geometry of a model at a KV type: the block layout, bytes per token, the budget.
struct KvGeometry {
  ops::KvLayout layout;
  int64_t n_layer = 0;         // full-attention layers (the main blocks)
  StateArena state;            // recurrent layers' slot layout (slot_floats 0: none)
  int64_t n_window_layer = 0;  // sliding-window layers (the window blocks); 0: none
  int64_t n_swa = 0;           // their window

  struct Split {
    int32_t main_blocks = 0, window_blocks = 0;
  };

  // Checks the KV type and block size against the model (model/forward.h's kv_layout_for).
  static KvGeometry for_model(const HParams& hp, TensorType kv_type, int64_t block_tokens);

  int64_t block_tokens() const { return layout.block_tokens; }
  // K+V bytes of one token, and of one block, over the main pool's layers, and the window's.
  size_t bytes_per_token() const { return 2 * layout.token_bytes() * static_cast<size_t>(n_layer); }
  size_t bytes_per_block() const { return 2 * layout.block_bytes() * static_cast<size_t>(n_layer); }
  size_t window_bytes_per_token() const {
    return 2 * layout.token_bytes() * static_cast<size_t>(n_window_layer);
  }
  size_t window_bytes_per_block() const {
    return 2 * layout.block_bytes() * static_cast<size_t>(n_window_layer);
  }
  // Window blocks a decoding sequence holds at most: ceil(n_swa/B)+1 (0 without windows).
  int64_t window_blocks_per_sequence() const {
    return n_window_layer > 0 ? blocks_for_tokens(n_swa) + 1 : 0;
  }
  // The window pool's size (header comment): 2 * (max_sequences * (ceil(n_swa/B)+2) +
  // ceil(step_tokens/B)).
  int64_t window_blocks_wanted(int max_sequences, int64_t step_tokens) const;
  // The budget's blocks for each pool (window_blocks 0 without windows).
  Split split(size_t budget_bytes, int max_sequences, int64_t step_tokens) const;
  int64_t blocks_for_tokens(int64_t n_tokens) const {
    return (n_tokens + block_tokens() - 1) / block_tokens();
  }
  // Room for `max_running` full contexts of `max_seq_tokens` (whole blocks each), but never more
  // than half the memory the machine has available (weights are mapped, not counted here).
  // Models with windows: plus the window pool's wanted blocks (max_running sequences and as many
  // completing, chunks of step_tokens).
  size_t default_budget(int64_t max_seq_tokens, int max_running, int64_t step_tokens = 32) const;
};

// The prefix cache behind the pool, and its disk tier.
struct KvCacheOptions {
  bool prefix_cache = true;  // reuse KV across requests (kv/prefix_cache.h)
  std::string dir;           // disk tier for evicted blocks; empty: none
  std::string model_hash;    // the model file's content hash (names the disk tier's identity)
  uint64_t disk_max = 8ull << 30;
  bool write_through = false;  // write whole blocks when cached (PrefixCache::set_write_through)
  // Hybrid models (recurrent layers). Working state slots: sequences that hold a state at once
  // (the engine's running and completing sequences). Snapshot budget: 0 is the default, half the
  // KV budget but room for at least one snapshot per working slot (default_snapshot_bytes).
  // The finest snapshot interval, in tokens (see the header comment).
  int max_sequences = 1;
  size_t snapshot_bytes = 0;
  int64_t snapshot_interval = 16;
  // Models with windows: the most tokens one step computes (sizes the window pool).
  int64_t step_tokens = 32;
};

size_t default_snapshot_bytes(size_t kv_budget, size_t slot_bytes, int max_sequences);

// What the manager reads of a sequence: its tokens and how many of them are computed (the
// engine's progress), and their text when it has per-token text (for text anchoring).
struct SeqView {
  int64_t id = 0;
  std::span<const int32_t> tokens;  // prompt + generated
  int64_t n_computed = 0;           // tokens whose K/V are in the sequence's blocks
  TokenText text;                   // empty `ends`: no per-token text
};

// What a text lookup found (KvManager::match_text): the cached path's own tokens, the text
// each ends at, and the prompt bytes they cover. The caller continues the sequence from them.
struct TextHit {
  std::vector<int32_t> tokens;
  std::vector<uint32_t> ends;  // per token while the cached path has text (may stop short)
  size_t text_bytes = 0;
  int64_t n_tokens() const { return static_cast<int64_t>(tokens.size()); }
};

// One sequence's cached state. See the header comment for how other layer kinds join it.
struct SeqKvState {
  std::vector<int32_t> blocks;   // attention layers: the block table
  int32_t state_slot = -1;       // recurrent layers: the working slot
  std::vector<int64_t> anchors;  // positions still to snapshot (prompt end - 1, branch point)
  int64_t branch_point = 0;      // where it left the cached path (0: none)
  std::vector<int32_t> window;   // sliding-window layers: window blocks, -1 once slid out
  int64_t cache_at = 0;          // window caches: the prompt's end, cached when computed
  PrefixMatch text_match;        // held from match_text until attach takes it
};

class KvManager {
 public:
  // A pool of `budget_bytes` (at least one block), with a prefix cache when `cache` asks for it.
  KvManager(const KvGeometry& geometry, size_t budget_bytes, const KvCacheOptions& cache);
  ~KvManager();
  KvManager(const KvManager&) = delete;
  KvManager& operator=(const KvManager&) = delete;

  // A text prompt's first admission begins here: the longest cached path, at most `max_tokens`
  // long, that `lead` (matched by id) and then `text` start with, respecting the prompt's cold
  // tokenization (`splits`; none: the text alone decides, the engine always gives them). The
  // hit is held for the sequence until attach; what it covers is returned, empty when it covers
  // no more than `lead`. The caller then makes the sequence's tokens the hit's own followed by
  // its cold tokens after `text_bytes`, and attaches them.
  TextHit match_text(int64_t id, std::span<const int32_t> lead, std::string_view text,
                     int64_t max_tokens, const PromptSplits* splits = nullptr);
  // On admission: the sequence's first blocks, at most `max_tokens` long: the text hit held by
  // match_text when there is one and it leaves a token to compute, otherwise the longest cached
  // prefix of `tokens`. Returns the tokens they cover.
  int64_t attach(int64_t id, std::span<const int32_t> tokens, int64_t max_tokens);
  // Room for `n_new` tokens after the `n_computed` the sequence has, the block the next token
  // writes its own; false when the pool (after evicting all it can) is short.
  bool allocate_slots(int64_t id, int64_t n_computed, int64_t n_new);
  // Gives back the blocks past those that hold the first `n_tokens` positions (speculative
  // decoding: room taken for drafts the sampler did not choose).
  void trim(int64_t id, int64_t n_tokens);
  std::span<const int32_t> block_table(int64_t id) const;
  // Sliding-window layers: the window table (empty for models without them).
  std::span<const int32_t> window_table(int64_t id) const;
  bool holds(int64_t id) const;  // the sequence holds blocks
  // Recurrent layers: the slot of kv arena().state the forward pass reads and updates for the
  // sequence (-1: none, the model has no recurrent layers or the sequence holds no state).
  int32_t state_slot(int64_t id) const;
  // The next position after `n_computed` where a snapshot of the sequence is wanted: its
  // prefill chunk should end there. 0: none (no recurrent layers, or no prefix cache).
  int64_t snapshot_stop(int64_t id, int64_t n_computed) const;
  // After a step: the sequence computed up to s.n_computed; a snapshot is taken when that is a
  // wanted position (the path is cached first, as by cache_unfinished).
  void computed(const SeqView& s);

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
  const BlockPool* window_pool() const { return window_pool_.get(); }  // null: no windows
  // The blocks and the recurrent-state slots, as the forward pass addresses them.
  const KvArena& arena() const { return arena_; }
  const StatePool& states() const { return states_; }
  bool recurrent() const { return states_.enabled(); }
  // The interval between snapshots now (the finest while the store is less than half full).
  int64_t snapshot_interval() const;
  int32_t n_blocks() const { return pool_.n_blocks(); }
  int64_t block_tokens() const { return pool_.block_tokens(); }
  size_t bytes_per_token() const { return geometry_.bytes_per_token(); }
  size_t window_bytes_per_token() const { return geometry_.window_bytes_per_token(); }
  bool caching() const { return cache_ != nullptr; }
  // Blocks held by the prefix cache alone (reclaimable).
  int64_t cache_only_blocks() const;
  int64_t cache_only_window_blocks() const;
  std::optional<PrefixCacheStats> cache_stats() const;
  DiskTierStats disk_stats() const;           // zeros without a disk tier
  DiskTierStats snapshot_disk_stats() const;  // the snapshots' files (hybrid models)

 private:
  void open_disk_tiers(const KvCacheOptions& cache);
  void open_cache(const KvCacheOptions& cache);
  std::optional<int32_t> allocate_block();  // evicts cached blocks while the pool is empty
  std::optional<int32_t> allocate_window_block();
  bool make_writable(std::vector<int32_t>& table, int64_t n_computed, bool window);
  bool slide_window(SeqKvState& st, int64_t n_computed, int64_t need);
  void release_match(PrefixMatch& m);
  void adopt_match(SeqKvState& st, PrefixMatch& m, std::span<const int32_t> tokens);
  void insert(const SeqView& s, const std::vector<int32_t>& blocks,
              const std::vector<int32_t>& window);
  void cache_path(const SeqView& s, bool anchor);
  void snapshot(const SeqView& s, int32_t working, bool anchor);
  bool ensure_state_slot(SeqKvState& st, int64_t n_computed);
  void release_to_cache(const SeqView& s);
  void release(std::vector<int32_t>& blocks);
  void release(SeqKvState& st);

  KvGeometry geometry_;
  KvCacheOptions options_;
  KvGeometry::Split split_;
  BlockPool pool_;
  std::unique_ptr<BlockPool> window_pool_;  // models with sliding-window layers
  StatePool states_;                        // before cache_: the cache's snapshots go back to it
  KvArena arena_;
  std::unique_ptr<DiskTier> disk_;
  std::unique_ptr<DiskTier> state_disk_;   // hybrid models: the snapshots' files
  std::unique_ptr<DiskTier> window_disk_;  // sliding-window layers: the window blocks' files
  std::unique_ptr<PrefixCache> cache_;
  SnapshotStore* snapshots_ = nullptr;  // hybrid models: the cache's recurrent-state snapshots
  WindowStore* windows_ = nullptr;      // sliding-window layers: the cache's window blocks
  std::unordered_map<int64_t, SeqKvState> seqs_;
};

}  // namespace hearth
