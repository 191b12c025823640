#include "kv/state_pool.h"

#include <gtest/gtest.h>

#include <set>

#include "util/error.h"

namespace hearth {
namespace {

StateArena layout(int64_t floats) {
  StateArena a;
  a.layer_offset = {0, -1};
  a.slot_floats = floats;
  return a;
}

TEST(StatePool, AttentionOnlyModelsGetNoSlots) {
  StatePool pool(layout(0), 4, 4);
  EXPECT_FALSE(pool.enabled());
  EXPECT_EQ(pool.n_slots(), 0);
  EXPECT_FALSE(pool.allocate_working().has_value());
  EXPECT_EQ(pool.arena().base, nullptr);
}

TEST(StatePool, WorkingSlotsStartZeroedAndSnapshotsStayWithinTheirCount) {
  StatePool pool(layout(6), 2, 3);
  ASSERT_TRUE(pool.enabled());
  EXPECT_EQ(pool.n_slots(), 5);
  EXPECT_EQ(pool.slot_bytes(), 6 * sizeof(float));
  std::set<int32_t> snaps;
  for (int i = 0; i < 3; ++i) snaps.insert(*pool.allocate_snapshot());
  EXPECT_EQ(snaps.size(), 3u);
  EXPECT_FALSE(pool.allocate_snapshot().has_value());  // the snapshot count is full
  EXPECT_EQ(pool.n_snapshots(), 3);

  // A slot used before comes back zeroed as a working slot.
  const int32_t s = *snaps.begin();
  for (int i = 0; i < 6; ++i) pool.arena().slot(s)[i] = 1.5f + static_cast<float>(i);
  pool.release(s);
  EXPECT_EQ(pool.n_snapshots(), 2);
  const int32_t w = *pool.allocate_working();
  for (int i = 0; i < 6; ++i) EXPECT_EQ(pool.arena().slot(w)[i], 0.0f);

  // Copies are whole slots; slots never overlap.
  const int32_t x = *pool.allocate_working();
  pool.arena().slot(w)[5] = 7.0f;
  pool.copy(x, w);
  EXPECT_EQ(pool.arena().slot(x)[5], 7.0f);
  EXPECT_EQ(pool.arena().slot(x) - pool.arena().slot(w), (x - w) * 6);
  EXPECT_TRUE(pool.allocate_working().has_value());
  EXPECT_FALSE(pool.allocate_working().has_value());  // all five taken
}

TEST(StatePool, MisuseIsAnError) {
  StatePool pool(layout(4), 1, 1);
  const int32_t w = *pool.allocate_working();
  pool.release(w);
  EXPECT_THROW(pool.release(w), Error);
  EXPECT_THROW(pool.release(5), Error);
  const int32_t a = *pool.allocate_working();
  EXPECT_THROW(pool.copy(a, 1 - a), Error);  // the other slot is free
}

}  // namespace
}  // namespace hearth
