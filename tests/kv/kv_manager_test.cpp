#include "kv/kv_manager.h"
#include "kv/kv_test_util.h"

#include <gtest/gtest.h>

#include <numeric>
#include <string>

namespace hearth {
namespace {

KvGeometry geometry() {
  return test::small_f16_geometry(4, 2);
}

KvCacheOptions cache_on(bool on = true) {
  KvCacheOptions c;
  c.prefix_cache = on;
  return c;
}

using test::iota_tokens;

// Every block is free or held by the cache alone: nothing leaked.
void expect_all_returned(const KvManager& kv) {
  EXPECT_EQ(kv.pool().n_free() + kv.cache_only_blocks(), kv.n_blocks());
}

TEST(KvGeometry, SizesFollowTheLayout) {
  const KvGeometry g = geometry();
  KvManager kv(g, g.bytes_per_block() * 5 + 7, cache_on());
  EXPECT_EQ(kv.n_blocks(), 5);
  EXPECT_EQ(kv.bytes_per_token(), kv.arena().bytes_per_token());
  EXPECT_EQ(g.bytes_per_block(), kv.arena().block_stride());
  EXPECT_EQ(g.blocks_for_tokens(9), 3);
  EXPECT_GE(g.default_budget(9, 2), 1u);
  EXPECT_LE(g.default_budget(9, 2), g.bytes_per_block() * 6);
}

TEST(KvManager, AttachMatchesTheCachedPrefixByTokens) {
  const KvGeometry g = geometry();
  KvManager kv(g, g.bytes_per_block() * 8, cache_on());
  const std::vector<int32_t> a = iota_tokens(10);
  ASSERT_TRUE(kv.allocate_slots(1, 0, 10));
  EXPECT_EQ(kv.block_table(1).size(), 3u);
  kv.cache_finished({1, a, 10, {}});
  EXPECT_FALSE(kv.holds(1));
  expect_all_returned(kv);

  std::vector<int32_t> b = iota_tokens(9);
  b.push_back(7);
  b.push_back(8);
  EXPECT_EQ(kv.attach(2, b, 100), 9);  // diverges at token 9
  EXPECT_EQ(kv.block_table(2).size(), 3u);
  EXPECT_EQ(kv.attach(3, a, 100), 9);  // all cached: the last token still runs
  kv.free(2);
  kv.free(3);
  expect_all_returned(kv);
  EXPECT_GT(kv.cache_stats()->hit_tokens, 0);
}

TEST(KvManager, AttachByTextAdoptsTheCachedTokens) {
  const KvGeometry g = geometry();
  KvManager kv(g, g.bytes_per_block() * 8, cache_on());
  const std::vector<int32_t> a = {1, 2, 3, 4, 5, 6};
  const std::string text = "abcdef";
  const std::vector<uint32_t> ends = {1, 2, 3, 4, 5, 6};
  ASSERT_TRUE(kv.allocate_slots(1, 0, 6));
  kv.cache_finished({1, a, 6, {text, ends}});

  // The same text tokenized differently (one token per two bytes) still hits.
  const TextHit hit = kv.match_text(2, {}, "abcdefgh", 100);
  EXPECT_EQ(hit.text_bytes, 6u);
  std::vector<int32_t> tokens = hit.tokens;
  tokens.insert(tokens.end(), {7, 8});
  EXPECT_EQ(kv.attach(2, tokens, 100), 6);
  EXPECT_EQ(tokens, (std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7, 8}));
  kv.free(2);

  // No text hit: matched by tokens.
  EXPECT_EQ(kv.match_text(3, {}, "xyz", 100).n_tokens(), 0);
  const std::vector<int32_t> c = {1, 2, 3, 9};
  EXPECT_EQ(kv.attach(3, c, 100), 3);
  kv.free(3);
  expect_all_returned(kv);
}

// Two cached conversations may spell the same text with different tokens (a reply, and the
// same text tokenized afresh when it came back in a prompt): a text match must follow the one
// whose blocks go on matching, not stop at the first sibling that matches a whole block.
TEST(KvManager, AttachByTextTriesEverySpellingOfTheSameText) {
  const KvGeometry g = geometry();
  KvManager kv(g, g.bytes_per_block() * 16, cache_on());
  const int64_t bt = kv.pool().block_tokens();
  ASSERT_EQ(bt, 4);
  // "abcd" + "efgh", and "abcd" (other tokens) + "wxyz" + "pqrs": one byte per token.
  auto turn = [&](int64_t id, std::vector<int32_t> tokens, const std::string& text) {
    std::vector<uint32_t> ends(tokens.size());
    std::iota(ends.begin(), ends.end(), 1u);
    ASSERT_TRUE(kv.allocate_slots(id, 0, static_cast<int64_t>(tokens.size())));
    kv.cache_finished({id, tokens, static_cast<int64_t>(tokens.size()), {text, ends}});
  };
  turn(1, {1, 2, 3, 4, 5, 6, 7, 8}, "abcdefgh");
  turn(2, {11, 12, 13, 14, 21, 22, 23, 24, 31, 32, 33, 34}, "abcdwxyzpqrs");

  // The hit's tokens, then a token of the prompt's own after them.
  auto admit = [&](int64_t id, std::string_view text) {
    std::vector<int32_t> tokens = kv.match_text(id, {}, text, 100).tokens;
    tokens.push_back(7);
    return std::pair(kv.attach(id, tokens, 100), tokens);
  };
  auto [n3, tokens3] = admit(3, "abcdwxyzpqrs and more");
  EXPECT_EQ(n3, 12);
  EXPECT_EQ(tokens3, (std::vector<int32_t>{11, 12, 13, 14, 21, 22, 23, 24, 31, 32, 33, 34, 7}));
  kv.free(3);
  // The other spelling still wins where it goes further.
  auto [n4, tokens4] = admit(4, "abcdefgh!");
  EXPECT_EQ(n4, 8);
  EXPECT_EQ(tokens4, (std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7, 8, 7}));
  kv.free(4);
  expect_all_returned(kv);
}

// A finished turn: cached at once up to its last token, which takes one more cache-only row in
// the shared partial block (copied on write), then all of it is cached and freed.
TEST(KvManager, FinishedTurnCachesUnfinishedThenFinished) {
  const KvGeometry g = geometry();
  KvManager kv(g, g.bytes_per_block() * 8, cache_on());
  const int start_free = kv.pool().n_free();
  const std::vector<int32_t> a = iota_tokens(11);  // 10 computed + the last sampled token
  ASSERT_TRUE(kv.allocate_slots(1, 0, 10));
  const int32_t partial = kv.block_table(1)[2];
  kv.arena().k(partial, 1)[5] = 0x5a;

  EXPECT_TRUE(kv.finish_turn({1, a, 10, {}}));
  EXPECT_EQ(kv.pool().refcount(partial), 2);  // the cache has it too
  // Another request finds the computed part at once.
  EXPECT_EQ(kv.attach(2, a, 100), 10);
  kv.free(2);

  ASSERT_TRUE(kv.allocate_slots(1, 10, 1));  // the cache-only row
  const int32_t copy = kv.block_table(1)[2];
  EXPECT_NE(copy, partial);  // copy-on-write
  EXPECT_EQ(kv.pool().refcount(copy), 1);
  EXPECT_EQ(kv.arena().k(copy, 1)[5], 0x5a);
  kv.cache_finished({1, a, 11, {}});
  EXPECT_FALSE(kv.holds(1));
  expect_all_returned(kv);

  std::vector<int32_t> next = a;
  next.push_back(1);
  EXPECT_EQ(kv.attach(3, next, 100), 11);  // the whole turn
  kv.free(3);
  expect_all_returned(kv);
  EXPECT_EQ(kv.pool().n_free() + kv.cache_only_blocks(), start_free);
}

TEST(KvManager, FinishedTurnWithoutCacheFreesAtOnce) {
  const KvGeometry g = geometry();
  KvManager kv(g, g.bytes_per_block() * 4, cache_on(false));
  const std::vector<int32_t> a = iota_tokens(6);
  ASSERT_TRUE(kv.allocate_slots(1, 0, 5));
  EXPECT_FALSE(kv.finish_turn({1, a, 5, {}}));
  EXPECT_FALSE(kv.caching());
  EXPECT_EQ(kv.pool().n_free(), 4);
}

TEST(KvManager, AllocateEvictsCachedBlocks) {
  const KvGeometry g = geometry();
  KvManager kv(g, g.bytes_per_block() * 4, cache_on());
  const std::vector<int32_t> a = iota_tokens(16);
  ASSERT_TRUE(kv.allocate_slots(1, 0, 16));
  EXPECT_EQ(kv.pool().n_free(), 0);
  kv.cache_finished({1, a, 16, {}});
  EXPECT_EQ(kv.cache_only_blocks(), 4);

  ASSERT_TRUE(kv.allocate_slots(2, 0, 8));  // two cached blocks make room
  EXPECT_GE(kv.cache_stats()->evictions, 2);
  EXPECT_FALSE(kv.allocate_slots(3, 0, 12));  // more than the pool has besides seq 2
  kv.free(3);
  kv.free(2);
  expect_all_returned(kv);
}

TEST(KvManager, PreemptionReturnsEveryBlock) {
  const KvGeometry g = geometry();
  KvManager kv(g, g.bytes_per_block() * 6, cache_on());
  const std::vector<int32_t> a = iota_tokens(9);
  ASSERT_TRUE(kv.allocate_slots(1, 0, 9));
  ASSERT_TRUE(kv.allocate_slots(2, 0, 4));
  kv.preempt({1, a, 9, {}});
  kv.preempt({2, a, 0, {}});  // nothing computed: freed uncached
  EXPECT_FALSE(kv.holds(1));
  EXPECT_FALSE(kv.holds(2));
  expect_all_returned(kv);
  EXPECT_EQ(kv.cache_only_blocks(), 3);
  EXPECT_EQ(kv.attach(1, a, 100), 8);  // readmission finds it
  kv.free(1);
  expect_all_returned(kv);
}

}  // namespace
}  // namespace hearth
