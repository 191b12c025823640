// The scheduler's cost model: a chunk's cost grows with its depth, the budget is what a chunk of
// the step's tokens costs at depth 0, and fit() returns the largest chunk within an allowance.
#include "engine/step_cost.h"

#include <gtest/gtest.h>

#include "qwen3_shape.h"

namespace hearth {
namespace {

using test::qwen3_06b;

TEST(StepCost, DepthEquivalentFromTheModelShape) {
  // Per token 2 · 15,728,640 weight operations per layer; per position 4 · 2,048; times 0.4.
  EXPECT_NEAR(StepCost(qwen3_06b()).depth_equivalent(), 0.4 * 2 * 15728640.0 / 8192, 1e-6);
}

TEST(StepCost, ChunkCostGrowsWithDepth) {
  const StepCost c(qwen3_06b());
  const double d = c.depth_equivalent();
  EXPECT_DOUBLE_EQ(c.chunk(0, 0), 0);
  EXPECT_DOUBLE_EQ(c.chunk(0, 32), 32 * (1 + 16 / d));
  EXPECT_DOUBLE_EQ(c.chunk(1000, 32), 32 * (1 + 1016 / d));
  EXPECT_GT(c.chunk(2000, 32), c.chunk(1000, 32));
}

TEST(StepCost, FitIsTheLargestChunkWithinTheAllowance) {
  const StepCost c(qwen3_06b());
  const double budget = c.chunk(0, 32);
  EXPECT_EQ(c.fit(0, 1000, budget), 32);  // the whole budget at depth 0
  EXPECT_EQ(c.fit(0, 20, budget), 20);    // no more than the prompt has
  EXPECT_EQ(c.fit(0, 0, budget), 0);
  EXPECT_EQ(c.fit(100000, 1000, budget), 1);  // always advances
  EXPECT_EQ(c.fit(0, 1000, 0.0), 1);
  int64_t last = 32;
  bool shrank = false;
  for (int64_t depth = 0; depth <= 8000; depth += 50) {
    const int64_t n = c.fit(depth, 1000, budget);
    ASSERT_LE(n, last) << depth;
    shrank = shrank || n < last;
    last = n;
    if (n > 1) {
      ASSERT_LE(c.chunk(depth, n), budget) << depth;
    }
    ASSERT_GT(c.chunk(depth, n + 1), budget) << depth;
  }
  EXPECT_TRUE(shrank);
  EXPECT_LT(c.fit(2000, 1000, budget), 16);  // about half the tokens at 1.3 D
}

TEST(StepCost, ShapelessModelCostsTokensOnly) {
  const StepCost c(HParams{});
  EXPECT_EQ(c.fit(1000000, 1000, 32.0), 32);
}

}  // namespace
}  // namespace hearth
