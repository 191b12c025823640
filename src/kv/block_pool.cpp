#include "kv/block_pool.h"

#include <cstring>

#include "util/error.h"

namespace hearth {

int32_t BlockPool::blocks_for_budget(const ops::KvLayout& layout, int64_t n_layer, size_t bytes) {
  const size_t per_block = 2 * layout.block_bytes() * static_cast<size_t>(n_layer);
  const size_t n = per_block == 0 ? 1 : bytes / per_block;
  return static_cast<int32_t>(std::max<size_t>(1, std::min<size_t>(n, 1u << 30)));
}

BlockPool::BlockPool(const ops::KvLayout& layout, int64_t n_layer, int32_t n_blocks) {
  if (n_blocks <= 0) fail("KV pool needs at least one block");
  arena_.layout = layout;
  arena_.n_layer = n_layer;
  arena_.n_blocks = n_blocks;
  bytes_ = arena_.block_stride() * static_cast<size_t>(n_blocks);
  // Anonymous mapping: pages are committed (2 MiB at a time) only when a block is first written.
  mem_ = AnonymousMemory::lazy(bytes_, "KV pool");
  arena_.base = mem_.data();
  refs_.assign(static_cast<size_t>(n_blocks), 0);
  free_.reserve(static_cast<size_t>(n_blocks));
  for (int32_t b = n_blocks - 1; b >= 0; --b) free_.push_back(b);
}

void BlockPool::check(int32_t block) const {
  if (block < 0 || block >= arena_.n_blocks) fail("KV block id {} is out of range", block);
}

std::optional<int32_t> BlockPool::allocate() {
  if (free_.empty()) return std::nullopt;
  const int32_t b = free_.back();
  free_.pop_back();
  refs_[static_cast<size_t>(b)] = 1;
  return b;
}

void BlockPool::retain(int32_t block) {
  check(block);
  if (refs_[static_cast<size_t>(block)] <= 0) fail("KV block {} retained while free", block);
  ++refs_[static_cast<size_t>(block)];
}

void BlockPool::release(int32_t block) {
  check(block);
  int32_t& r = refs_[static_cast<size_t>(block)];
  if (r <= 0) fail("KV block {} released while free", block);
  if (--r == 0) free_.push_back(block);
}

void BlockPool::copy(int32_t dst, int32_t src) {
  check(dst);
  check(src);
  if (dst != src) std::memcpy(arena_.k(dst, 0), arena_.k(src, 0), arena_.block_stride());
}

int32_t BlockPool::refcount(int32_t block) const {
  check(block);
  return refs_[static_cast<size_t>(block)];
}

}  // namespace hearth
