#include "kv/block_pool.h"

#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "util/error.h"

namespace hearth {
namespace {

ops::KvLayout layout() {
  ops::KvLayout l;
  l.type = TensorType::F16;
  l.n_kv_head = 2;
  l.head_dim = 64;
  l.block_tokens = 16;
  l.head_major = true;
  return l;
}

TEST(BlockPool, AllocateReleaseRefcount) {
  BlockPool pool(layout(), 3, 4);
  EXPECT_EQ(pool.n_free(), 4);
  std::set<int32_t> got;
  for (int i = 0; i < 4; ++i) got.insert(*pool.allocate());
  EXPECT_EQ(got.size(), 4u);
  EXPECT_FALSE(pool.allocate().has_value());
  pool.retain(2);
  EXPECT_EQ(pool.refcount(2), 2);
  pool.release(2);
  EXPECT_EQ(pool.n_free(), 0);
  pool.release(2);
  EXPECT_EQ(pool.n_free(), 1);
  EXPECT_EQ(*pool.allocate(), 2);  // LIFO reuse
  EXPECT_THROW(pool.release(7), Error);
  for (int32_t b : got) pool.release(b);
  EXPECT_EQ(pool.n_free(), 4);
  EXPECT_THROW(pool.release(0), Error);  // double free
  EXPECT_THROW(pool.retain(0), Error);   // retain of a free block
}

TEST(BlockPool, BlocksAreDisjointAndWritable) {
  BlockPool pool(layout(), 2, 3);
  const KvArena& a = pool.arena();
  EXPECT_EQ(a.v(0, 0), a.k(0, 0) + a.layout.block_bytes());
  EXPECT_EQ(a.k(0, 1), a.v(0, 0) + a.layout.block_bytes());
  EXPECT_EQ(a.k(1, 0), a.k(0, 0) + a.block_stride());
  std::memset(a.k(2, 1), 0xAB, a.layout.block_bytes());
  std::memset(a.v(2, 1), 0xCD, a.layout.block_bytes());
  EXPECT_EQ(a.k(2, 1)[0], 0xAB);
  EXPECT_EQ(pool.bytes(), a.block_stride() * 3);
}

TEST(BlockPool, BudgetSizing) {
  const size_t per_block = 2 * layout().block_bytes() * 3;
  EXPECT_EQ(BlockPool::blocks_for_budget(layout(), 3, per_block * 10 + 5), 10);
  EXPECT_EQ(BlockPool::blocks_for_budget(layout(), 3, 0), 1);
  EXPECT_THROW(BlockPool(layout(), 3, 0), Error);
}

}  // namespace
}  // namespace hearth
