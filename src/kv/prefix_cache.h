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
// Where each kind of layer's cached state lives (one store per kind, kv/layer_store.h):
//  - attention layers: the paged blocks on this tree's nodes (CacheNode::block), evicted to the
//    blocks' disk tier (the tree's own kind: every other kind hangs off the positions it defines);
//  - recurrent layers (hybrid models): state snapshots in SnapshotStore (kv/snapshot_store.h),
//    per node, in slots of the state pool and files of their own disk tier;
//  - sliding-window layers (gemma3): window blocks in WindowStore (kv/window_store.h), per node,
//    in the window pool and files of their own disk tier.
// The tree tells each store what it does (a match, an insert, a node losing its block or
// leaving, shutdown), and a store may cut a match back to where its state lets it end.
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
#include "kv/layer_store.h"

namespace hearth {

class DiskTier;
struct DiskEntry;

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
  int64_t cut_tokens = 0;  // matched tokens given up for want of another kind's state
  // Recurrent caches (kv/snapshot_store.h).
  int64_t snapshots = 0;  // held now
  int64_t snapshots_inserted = 0;
  int64_t snapshot_evictions = 0;
  int64_t snapshot_hits = 0;       // matches that restored a snapshot
  int64_t snapshot_disk_hits = 0;  // of them, read back from the disk tier
  int64_t snapshots_on_disk = 0;   // held only on disk now
  // Window caches (kv/window_store.h).
  int64_t window_blocks = 0;  // held now
  int64_t window_evictions = 0;
};

class PrefixCache {
 public:
  // `disk`: the blocks' disk tier (null: none). `stores`: what the cache keeps for the model's
  // other kinds of layer (kv/layer_store.h), each bound to this tree; none for a plain
  // attention model.
  explicit PrefixCache(BlockPool& pool, DiskTier* disk = nullptr,
                       std::vector<std::unique_ptr<LayerStore>> stores = {});
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
  // other kind's state).
  void extend_from_disk(PrefixMatch& m, std::span<const int32_t> tokens, int64_t max_tokens);

  // Adds a sequence's computed tokens and takes over its references to `blocks` (which cover
  // them): a block whose tokens are already cached is released, the rest become nodes. `text`
  // (optional: empty ends) is the per-token text of `tokens`. Returns the node each kept block
  // is at, in order (fewer than `blocks` where the rest was not kept), for the stores to hang
  // the sequence's state of other layer kinds on.
  std::vector<CacheNode*> insert(std::span<const int32_t> tokens, std::span<const int32_t> blocks,
                                 const TokenText& text = {});

  // Frees one pool block by evicting the least-recently-used unused leaf; false when none.
  bool evict_one();
  // Writes every resident block not yet on disk, and each store's state (shutdown); no-op
  // without disk tiers.
  void flush_to_disk();
  // With a disk tier: also write each whole block as soon as it is cached (a --cache-dir shared
  // by several servers: the others, or this one after a crash, find it without waiting for an
  // eviction or a clean shutdown). Off by default: every block is then written once.
  void set_write_through(bool on) { write_through_ = on; }

  PrefixCacheStats stats() const;
  // Blocks referenced only by the cache (reclaimable).
  int64_t reclaimable_blocks() const;

  // For the stores: the tree's geometry and nodes.
  int64_t block_tokens() const { return pool_.block_tokens(); }
  CacheNode& root() const { return *root_; }
  // The node holding the last of `tokens` when all of them are a cached path, with how many of
  // its tokens they use; {nullptr, 0} otherwise.
  PathStep find_path(std::span<const int32_t> tokens) const;

 private:
  using Node = CacheNode;
  using Step = PathStep;

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
  void take(const CachePath& path, PrefixMatch& m);
  PrefixMatch take_restoring(CachePath& path, int32_t state_slot, const MayEnd& may_end);
  void cut_to_end(CachePath& path, const MayEnd& may_end);
  void give_up(PrefixMatch& m);
  Node* probe_disk(Node* parent, std::span<const int32_t> block_tokens);
  void cut_match(PrefixMatch& m, int64_t n);
  Node* add_node(Node* parent, std::span<const int32_t> chunk, int32_t block, const TokenText& text,
                 size_t pos);
  void supersede(Node* parent, Node& n);
  bool load_from_disk(Node& n);
  void trim_disk();
  void touch(Node* n);
  void remove(Node* n);
  void adopt_disk_nodes();
  Node* adopt_entry(Node* parent, DiskEntry&& e);

  BlockPool& pool_;
  DiskTier* disk_;
  bool write_through_ = false;
  std::unique_ptr<Node> root_;
  std::vector<std::unique_ptr<LayerStore>> stores_;
  std::unordered_set<Node*> resident_;  // nodes holding a block
  uint64_t tick_ = 0;
  PrefixCacheStats stats_;
};

}  // namespace hearth
