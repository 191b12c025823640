// The one KV store: a fixed number of refcounted blocks (each `block_tokens` tokens of every
// layer's K and V) carved from one lazily-committed mapping sized by a memory budget. Running
// sequences hold blocks by id; sharing a block is a refcount, never a copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "model/hparams.h"
#include "model/kv_arena.h"
#include "util/anonymous_memory.h"

namespace hearth {

class BlockPool {
 public:
  BlockPool(const ops::KvLayout& layout, int64_t n_layer, int32_t n_blocks);
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  // Blocks that fit in `bytes` (at least 1).
  static int32_t blocks_for_budget(const ops::KvLayout& layout, int64_t n_layer, size_t bytes);

  const KvArena& arena() const { return arena_; }
  int32_t n_blocks() const { return arena_.n_blocks; }
  int32_t n_free() const { return static_cast<int32_t>(free_.size()); }
  int64_t block_tokens() const { return arena_.layout.block_tokens; }
  size_t bytes() const { return bytes_; }

  std::optional<int32_t> allocate();  // refcount 1; nullopt when exhausted
  void retain(int32_t block);
  void release(int32_t block);  // back to the free list at refcount 0
  int32_t refcount(int32_t block) const;
  // Copies every layer's K and V of `src` into `dst` (copy-on-write of a shared block).
  void copy(int32_t dst, int32_t src);

 private:
  void check(int32_t block) const;

  KvArena arena_;
  size_t bytes_ = 0;
  AnonymousMemory mem_;  // the blocks (arena_.base points into it)
  std::vector<int32_t> refs_;
  std::vector<int32_t> free_;  // LIFO: recently freed blocks are warm in cache
};

}  // namespace hearth
