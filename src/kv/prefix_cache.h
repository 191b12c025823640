// The conversation cache: a radix tree over token ids whose nodes own KV blocks of the engine's
// pool, shared by every sequence and session.
//
// A node stands for one block: up to `block_tokens` tokens at block index `depth`, and holds one
// pool reference to the block that has their K/V. Only a leaf may be partial (fewer tokens than a
// block). A new sequence reuses the longest cached prefix: whole blocks by reference (no copy);
// where the match ends inside a block (a partial node, or a block it shares only in part), that
// block is copied, since the sequence will write its own next tokens into it.
//
// Text anchoring: a path may also remember the exact text its tokens stand for (per token, as the
// rendered prompt or the streamed reply gave it). A prompt given as text is matched against that
// text, so a reply that re-tokenizes differently from the ids that were generated still hits.
// Rule: a conversation keeps the tokens it was actually computed with; only text after the
// longest matching path is tokenized afresh.
//
// Eviction: least-recently-used leaves whose blocks no sequence holds go first; a shared prefix
// lives as long as anything under it is used. With a disk tier, an evicted block is written out
// and its node stays in the tree (without a block) to be read back on a hit.
//
// Exactness: K/V of position p depends only on tokens [0, p] (causal attention) and the forward
// pass is batch- and chunk-invariant, so reused K/V is bit-identical to recomputed K/V.
//
// Recurrent layers (hybrid models, given a StatePool): their state cannot be trimmed back to an
// earlier position, so a path also holds state snapshots at token positions. A snapshot at
// position p (the state after tokens [0, p)) lives on the node holding token p-1 and owns one
// slot of the state pool; it is usable while that node is in the tree (its blocks resident or
// on disk), and goes with the node. A match on such a cache is cut back to the last snapshot at
// or before its end (position 0: nothing restored) and the snapshot is copied into the caller's
// slot, so a hit resumes exactly where the snapshot was taken. Snapshots are evicted on their
// own (evict_snapshot): least-recently-used first, interval snapshots before anchors (the ends of
// prompts, replies and branch points, where conversations continue). With a disk tier for
// snapshots, an evicted snapshot is written out and stays in the tree to be read back on a hit
// (restored straight into the caller's slot), every snapshot is written at shutdown, and a
// restart finds them on the paths it rebuilds; a file that cannot be read back is dropped and
// the match cut back further.
//
// Sliding-window layers (gemma3, given a window pool): their K/V lives in window blocks, which a
// running sequence frees once they slide out of its window (kv/kv_manager.h), so a cached path
// holds window blocks only where a sequence still held them when it was cached: at the tail of
// each cached prompt and reply. A node may hold one window block (the same positions as its
// block). A match ending at p is usable only if every window block that positions
// [p - n_swa + 1, p) fall in is on the path (p = 0 always is): the match is cut back to the
// largest such p (composed with the snapshot cut-back on a model with both), and the caller gets
// those window blocks (shared, or copied where it will write next) and -1 for the blocks before
// its window. Window blocks are evicted on their own pool's pressure, least-recently-used first
// (evict_window_one); a node that loses its block (evicted to disk, or removed) loses its window
// block too. With a disk tier for window blocks (beside the blocks'), a window block holding all
// of its node's tokens is written out when it is evicted (or its node's block is), stays in the
// tree as on disk and counts as cached (read back on a hit), is written at shutdown and found
// again on restart; one that cannot be read back is dropped and the match given up (recomputed).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "kv/block_pool.h"

namespace hearth {

class DiskTier;
class StatePool;

// Per-token text for a token path: token i stands for text[ends[i-1], ends[i]) (ends[-1] = 0).
struct TokenText {
  std::string_view text;
  std::span<const uint32_t> ends;
};

// How a text prompt's own (cold) tokenization splits its text, which a text match respects so
// that the tokens it leads to are the cold ones wherever they could differ in meaning:
//  - special tokens (`is_special`: the engine's are control tokens, which only a template's own
//    text may produce): a cached special token may cover the prompt's bytes only where the
//    prompt has one over the same bytes, and a cached plain token only where it has none. The
//    same bytes are content in one prompt and a turn marker in another (a user who types
//    "<|im_start|>"); a match never turns one into the other;
//  - a match ends only where a cold token ends, so that the rest is the cold tokens after it
//    (a cut inside a pre-token, e.g. between "." and a typed "<|", would re-tokenize the rest
//    differently from a cold read).
struct PromptSplits {
  std::vector<std::pair<uint32_t, uint32_t>> specials;  // [begin, end) bytes, in order
  std::vector<uint32_t> token_ends;                     // each cold token's end, in order
  std::function<bool(int32_t)> is_special;
  // Whether a cached `token` standing for the prompt's bytes [begin, end) agrees.
  bool agrees(int32_t token, size_t begin, size_t end) const;
  // Whether a cold token ends at byte `at`.
  bool token_ends_at(size_t at) const;
};

struct PrefixMatch {
  std::vector<int32_t> tokens;  // the matched tokens (the cached path's own ids)
  std::vector<int32_t> blocks;  // references now owned by the caller; cover `tokens`
  size_t text_bytes = 0;        // text matched (text lookups)
  std::vector<uint32_t> ends;   // per matched token, its text's end (while the path has text)
  int64_t disk_tokens = 0;      // of `tokens`, read back from the disk tier
  // Recurrent caches: the tokens the cached path shared before the cut back to a snapshot
  // (where the request leaves the cached path), and the position whose snapshot was restored
  // (0: none; the restore is valid only if it equals n_tokens()).
  int64_t n_shared = 0;
  int64_t state_tokens = 0;
  // Window caches: per block of `blocks`, its window block (a reference now owned by the
  // caller), -1 for blocks before the window of the match's end.
  std::vector<int32_t> window_blocks;
  int64_t n_tokens() const { return static_cast<int64_t>(tokens.size()); }
};

struct PrefixCacheStats {
  int64_t lookups = 0;
  int64_t lookup_tokens = 0;  // tokens asked for (token lookups) or matched + rest (text)
  int64_t hit_tokens = 0;     // tokens served from the cache (memory or disk)
  int64_t disk_hit_tokens = 0;
  int64_t probed_blocks = 0;  // disk blocks found by name on a miss (a shared cache folder)
  int64_t inserted_blocks = 0;
  int64_t evictions = 0;  // blocks taken from memory (to disk, or dropped)
  int64_t resident_blocks = 0;
  int64_t nodes = 0;
  // Recurrent caches.
  int64_t snapshots = 0;  // held now
  int64_t snapshots_inserted = 0;
  int64_t snapshot_evictions = 0;
  int64_t snapshot_hits = 0;       // matches that restored a snapshot
  int64_t snapshot_disk_hits = 0;  // of them, read back from the disk tier
  int64_t snapshots_on_disk = 0;   // held only on disk now
  int64_t cut_tokens = 0;          // matched tokens given up for want of a snapshot or window
  // Window caches.
  int64_t window_blocks = 0;  // held now
  int64_t window_evictions = 0;
};

class PrefixCache {
 public:
  // `states`: the recurrent-state pool of a hybrid model (snapshots), null otherwise;
  // `state_disk`: the snapshots' disk tier (files of one slot each), beside `disk`.
  // `window`: the window blocks of a model with sliding-window layers (window n_swa tokens).
  // `window_disk`: the window blocks' disk tier, beside `disk`.
  PrefixCache(BlockPool& pool, DiskTier* disk = nullptr, StatePool* states = nullptr,
              DiskTier* state_disk = nullptr, BlockPool* window = nullptr, int64_t n_swa = 0,
              DiskTier* window_disk = nullptr);
  ~PrefixCache();
  PrefixCache(const PrefixCache&) = delete;
  PrefixCache& operator=(const PrefixCache&) = delete;

  // Longest cached prefix of `tokens`, at most `max_tokens` long. Recurrent caches: cut back to
  // the last snapshot, which is copied into `state_slot` (a slot of the state pool).
  PrefixMatch match(std::span<const int32_t> tokens, int64_t max_tokens, int32_t state_slot = -1);
  // `lead` tokens matched by id (e.g. BOS), then the longest path whose text is a prefix of
  // `text` (nodes that carry text only), at most `max_tokens` tokens in all.
  // `splits` (when given): the prompt's cold tokenization, which the match respects
  // (PromptSplits).
  PrefixMatch match_text(std::span<const int32_t> lead, std::string_view text, int64_t max_tokens,
                         int32_t state_slot = -1, const PromptSplits* splits = nullptr);

  // Extends `m`, a match of the first m.n_tokens() of `tokens`, with the whole blocks after its
  // last block boundary that the disk tier holds though the tree does not (files another process
  // sharing the cache folder wrote), up to `max_tokens` tokens in all, when that makes it longer
  // (a match ending inside a block is then cut back to the boundary first). match() does this
  // itself; this is for a match made by text. Plain attention caches only (the files carry no
  // recurrent snapshots or window blocks).
  void extend_from_disk(PrefixMatch& m, std::span<const int32_t> tokens, int64_t max_tokens);

  // Recurrent caches: whether `tokens` is a cached path (all of it) without a snapshot at its
  // end, i.e. whether add_snapshot() would keep one there. With `anchor`, a snapshot already
  // there becomes an anchor.
  bool wants_snapshot(std::span<const int32_t> tokens, bool anchor = false);
  // Takes over snapshot `slot`: the state after `tokens`, kept at the end of their cached path
  // (an anchor: evicted after interval snapshots). Released when the path is not cached or
  // already has one there.
  void add_snapshot(std::span<const int32_t> tokens, int32_t slot, bool anchor);
  // Frees one snapshot slot: the least-recently-used interval snapshot, else anchor; false when
  // the cache holds none.
  // `intervals_only`: anchors stay (false when no interval snapshot is in memory).
  bool evict_snapshot(bool intervals_only = false);

  // Adds a sequence's computed tokens and takes over its references to `blocks` (which cover
  // them): a block whose tokens are already cached is released, the rest become nodes. `text`
  // (optional: empty ends) is the per-token text of `tokens`.
  // `window` (window caches): the sequence's window table, whose references (entries >= 0) are
  // taken over too.
  void insert(std::span<const int32_t> tokens, std::span<const int32_t> blocks,
              const TokenText& text = {}, std::span<const int32_t> window = {});

  // Frees one pool block by evicting the least-recently-used unused leaf; false when none.
  bool evict_one();
  // Frees one window block: the least-recently-used one only the cache holds; false when none.
  bool evict_window_one();
  // Writes every resident block not yet on disk (shutdown); no-op without a disk tier.
  void flush_to_disk();
  // With a disk tier: also write each whole block as soon as it is cached (a --cache-dir shared
  // by several servers: the others, or this one after a crash, find it without waiting for an
  // eviction or a clean shutdown). Off by default: every block is then written once.
  void set_write_through(bool on) { write_through_ = on; }

  PrefixCacheStats stats() const;
  // Blocks referenced only by the cache (reclaimable).
  int64_t reclaimable_blocks() const;
  int64_t reclaimable_window_blocks() const;

 private:
  struct Node;
  struct Step {
    Node* node;
    int64_t used;  // tokens of the node used by the match
  };

  struct Snapshot;

  // May a match end after `step` (at global position `end`)?
  using MayEnd = std::function<bool(const Step& step, int64_t end)>;

  // A text prompt's match below `node` (its tokens from `pos`, its text from `off`): the path
  // (appended to `path`) that matches the most tokens. Whole blocks matched by text are
  // followed; when two siblings both match all their tokens (the same text spelled with
  // different tokens: a reply and its re-rendering), both are explored, `branches` bounding how
  // many such extra explorations a lookup makes. Returns the tokens matched.
  struct TextQuery {
    std::span<const int32_t> lead;
    std::string_view text;
    int64_t max_tokens;
    const PromptSplits* splits;
  };
  int64_t match_text_below(const Node* node, int64_t pos, size_t off, const TextQuery& q,
                           int& branches, std::vector<Step>& path) const;
  PrefixMatch take(const std::vector<Step>& path);
  PrefixMatch take_restoring(std::vector<Step>& path, int32_t state_slot, const MayEnd& may_end);
  Snapshot* cut_to_snapshot(std::vector<Step>& path, const MayEnd& may_end);
  Step find_path(std::span<const int32_t> tokens) const;
  Node* probe_disk(Node* parent, std::span<const int32_t> block_tokens);
  void cut_match(PrefixMatch& m, int64_t n);
  bool restore(Node& n, Snapshot& s, int32_t state_slot);
  void spill(Node& n, Snapshot& s);
  void erase_snapshot(Node* n, size_t i);
  void trim_snapshot_disk();
  void adopt_disk_snapshots();
  void flush_snapshots();
  void drop_snapshots(Node* n);
  bool window_covered(const std::vector<Step>& path, const Step& last, int64_t end) const;
  void cut_to_window(std::vector<Step>& path, const MayEnd& may_end);
  void take_windows(const std::vector<Step>& path, PrefixMatch& m);
  void adopt_window(Node* n, int32_t window_block, int64_t used);
  void drop_window(Node* n);
  void evict_window(Node* n);
  bool load_window(Node& n);
  void trim_window_disk();
  void adopt_disk_windows();
  void flush_windows();
  bool load_from_disk(Node& n);
  void touch(Node* n);
  void remove(Node* n);
  void adopt_disk_nodes();

  BlockPool& pool_;
  DiskTier* disk_;
  bool write_through_ = false;
  std::unique_ptr<Node> root_;
  StatePool* states_;
  DiskTier* state_disk_;
  std::unordered_set<Node*> resident_;  // nodes holding a block
  std::unordered_set<Node*> snapped_;   // nodes holding snapshots
  BlockPool* window_;                   // window caches: the window blocks; null otherwise
  int64_t n_swa_;
  DiskTier* window_disk_;
  std::unordered_set<Node*> windowed_;  // nodes holding a window block
  uint64_t tick_ = 0;
  PrefixCacheStats stats_;
};

}  // namespace hearth
