#include "ops/share_split.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace hearth::ops {
namespace {

std::vector<int> run_counts(ThreadPool& pool, int64_t n) {
  std::vector<std::atomic<int>> count(static_cast<size_t>(n));
  parallel_shares(pool, n, [&](int64_t s, int) { count[static_cast<size_t>(s)].fetch_add(1); });
  std::vector<int> out;
  for (auto& c : count) out.push_back(c.load());
  return out;
}

TEST(ParallelShares, EverySliceRunsExactlyOnce) {
  for (int threads : {1, 2, 3, 5, 9}) {  // 9: more shares than fit on the stack
    ThreadPool pool(threads);
    for (int64_t n : {0, 1, 2, 3, 4, 7, 64, 1000}) {
      const std::vector<int> c = run_counts(pool, n);
      for (int64_t s = 0; s < n; ++s)
        ASSERT_EQ(c[static_cast<size_t>(s)], 1) << "slice " << s << " of " << n << ", " << threads;
    }
  }
}

TEST(ParallelShares, OneThreadRunsTheSlicesInOrder) {
  ThreadPool pool(1);
  std::vector<int64_t> seen;
  parallel_shares(pool, 9, [&](int64_t s, int thread) {
    EXPECT_EQ(thread, 0);
    seen.push_back(s);
  });
  ASSERT_EQ(seen.size(), 9u);
  for (int64_t s = 0; s < 9; ++s) EXPECT_EQ(seen[static_cast<size_t>(s)], s);
}

// Each thread's own slices run front to back: the caller (thread 0) owns the first half, and
// whatever of it the caller runs comes in increasing order.
TEST(ParallelShares, AThreadTakesItsOwnShareFrontToBack) {
  ThreadPool pool(2);
  for (int rep = 0; rep < 50; ++rep) {
    std::vector<int64_t> caller;
    parallel_shares(pool, 64, [&](int64_t s, int thread) {
      if (thread == 0 && s < 32) caller.push_back(s);
    });
    for (size_t i = 1; i < caller.size(); ++i) ASSERT_LT(caller[i - 1], caller[i]);
  }
}

// A slow thread holds nobody up: the fast one takes the slow one's slices from the back.
TEST(ParallelShares, AFastThreadStealsFromASlowOne) {
  ThreadPool pool(2);
  std::atomic<int> by_caller{0};
  parallel_shares(pool, 64, [&](int64_t, int thread) {
    if (thread == 0)
      by_caller.fetch_add(1);
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
  });
  EXPECT_GT(by_caller.load(), 32);
}

TEST(ParallelShares, ExceptionsReachTheCaller) {
  ThreadPool pool(2);
  EXPECT_THROW(parallel_shares(pool, 16,
                               [](int64_t s, int) {
                                 if (s == 11) throw std::runtime_error("slice 11");
                               }),
               std::runtime_error);
}

}  // namespace
}  // namespace hearth::ops
