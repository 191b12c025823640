// The persistent thread pool: every task exactly once, exceptions, re-entrancy, stress, and a
// latency probe (printed, not asserted) for spinning vs sleeping workers.
#include "ops/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <thread>
#include <vector>

#include "util/error.h"

namespace hearth::ops {
namespace {

TEST(ThreadPool, EveryTaskRunsExactlyOnce) {
  for (int threads : {1, 2, 3, 4}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (int64_t n : {0, 1, 2, 3, 7, 64, 1001, 100000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      std::atomic<int> bad_thread{0};
      pool.parallel_for(n, [&](int64_t t, int th) {
        hits[static_cast<size_t>(t)].fetch_add(1, std::memory_order_relaxed);
        if (th < 0 || th >= threads) bad_thread.fetch_add(1);
      });
      for (int64_t t = 0; t < n; ++t) ASSERT_EQ(hits[static_cast<size_t>(t)].load(), 1) << n;
      EXPECT_EQ(bad_thread.load(), 0);
    }
  }
}

TEST(ThreadPool, SizeOneRunsInlineOnCaller) {
  ThreadPool pool(1);
  const auto me = std::this_thread::get_id();
  int count = 0;  // no atomics needed: everything runs on this thread, in order
  std::vector<int64_t> order;
  pool.parallel_for(5, [&](int64_t t, int th) {
    EXPECT_EQ(std::this_thread::get_id(), me);
    EXPECT_EQ(th, 0);
    order.push_back(t);
    ++count;
  });
  EXPECT_EQ(count, 5);
  EXPECT_EQ(order, (std::vector<int64_t>{0, 1, 2, 3, 4}));
  ThreadPool zero(0);  // clamped to 1
  EXPECT_EQ(zero.size(), 1);
}

TEST(ThreadPool, UsesWorkerThreads) {
  ThreadPool pool(2);
  std::atomic<int> on_worker{0};
  // Long enough tasks that the worker must take some.
  for (int rep = 0; rep < 20 && on_worker.load() == 0; ++rep)
    pool.parallel_for(8, [&](int64_t, int th) {
      if (th == 1) on_worker.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    });
  EXPECT_GT(on_worker.load(), 0);
}

TEST(ThreadPool, ExceptionsPropagateToCaller) {
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    EXPECT_THROW(pool.parallel_for(100,
                                   [&](int64_t t, int) {
                                     if (t == 37) throw std::runtime_error("task 37");
                                   }),
                 std::runtime_error);
    // Every task throwing: still exactly one exception, no terminate.
    EXPECT_THROW(pool.parallel_for(50, [&](int64_t, int) { throw std::logic_error("all"); }),
                 std::logic_error);
    // The pool is usable afterwards.
    std::atomic<int64_t> sum{0};
    pool.parallel_for(100, [&](int64_t t, int) { sum.fetch_add(t); });
    EXPECT_EQ(sum.load(), 99 * 100 / 2);
  }
}

TEST(ThreadPool, NestedCallIsAnError) {
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    EXPECT_THROW(
        pool.parallel_for(4, [&](int64_t, int) { pool.parallel_for(2, [](int64_t, int) {}); }),
        Error);
    std::atomic<int> n{0};
    pool.parallel_for(3, [&](int64_t, int) { n.fetch_add(1); });
    EXPECT_EQ(n.load(), 3);
  }
}

TEST(ThreadPool, StressBackToBackRegions) {
  ThreadPool pool(3);
  int64_t total = 0;
  std::vector<int64_t> slot(64);
  for (int rep = 0; rep < 20000; ++rep) {
    const int64_t n = 1 + rep % 17;
    pool.parallel_for(n, [&](int64_t t, int) { slot[static_cast<size_t>(t)] += t + 1; });
    total += n * (n + 1) / 2;
  }
  int64_t got = 0;
  for (int64_t v : slot) got += v;
  EXPECT_EQ(got, total);
}

TEST(ThreadPool, StressWorkersJoin) {
  // Tasks long enough that workers take part in most regions.
  ThreadPool pool(2);
  std::vector<int64_t> slot(8);
  std::atomic<int64_t> by_worker{0};
  for (int rep = 0; rep < 3000; ++rep) {
    pool.parallel_for(8, [&](int64_t t, int th) {
      const auto t0 = std::chrono::steady_clock::now();
      while (std::chrono::steady_clock::now() - t0 < std::chrono::microseconds(1)) {
      }
      slot[static_cast<size_t>(t)] += 1;
      if (th == 1) by_worker.fetch_add(1, std::memory_order_relaxed);
    });
  }
  for (int64_t v : slot) EXPECT_EQ(v, 3000);
  EXPECT_GT(by_worker.load(), 0);
}

TEST(ThreadPool, SleepingWorkersWakeUp) {
  ThreadPool pool(2);
  pool.set_spin_us(0);  // workers go straight to the condition variable
  EXPECT_EQ(pool.spin_us(), 0);
  for (int rep = 0; rep < 200; ++rep) {
    std::atomic<int> n{0};
    pool.parallel_for(5, [&](int64_t, int) { n.fetch_add(1); });
    ASSERT_EQ(n.load(), 5);
    if (rep % 50 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

TEST(ThreadPool, ManyPoolsCreatedAndDestroyed) {
  for (int i = 0; i < 50; ++i) {
    ThreadPool pool(1 + i % 4);
    if (i % 2) pool.parallel_for(10, [](int64_t, int) {});
  }
}

// Fork-join round trip of a region in which both threads must take part (each of the two
// tasks waits until the other has started), back to back (workers spinning) and after an idle
// gap longer than the spin window (workers asleep); plus an empty region (the caller may run
// everything and excuse the worker). Printed for the report; loose sanity bounds only.
// Disabled by default: timing belongs in benchmarks (run with --gtest_also_run_disabled_tests).
TEST(ThreadPool, DISABLED_LatencyProbe) {
  ThreadPool pool(2);
  using Clock = std::chrono::steady_clock;
  auto us_since = [](Clock::time_point t0) {
    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
  };
  std::atomic<int> started{0};
  int64_t target = 0;
  const auto both = [&](int64_t, int) {
    started.fetch_add(1, std::memory_order_acq_rel);
    while (started.load(std::memory_order_acquire) < target) {
    }
  };
  auto region = [&] {
    target += 2;
    pool.parallel_for(2, both);
  };
  for (int i = 0; i < 1000; ++i) region();
  const int kReps = 20000;
  auto t0 = Clock::now();
  for (int i = 0; i < kReps; ++i) region();
  const double spin_us = us_since(t0) / kReps;

  const auto noop = [](int64_t, int) {};
  t0 = Clock::now();
  for (int i = 0; i < kReps; ++i) pool.parallel_for(2, noop);
  const double empty_us = us_since(t0) / kReps;

  double sleep_total = 0;
  const int kSleepReps = 50;
  for (int i = 0; i < kSleepReps; ++i) {
    std::this_thread::sleep_for(std::chrono::microseconds(pool.spin_us() + 2000));
    t0 = Clock::now();
    region();
    sleep_total += us_since(t0);
  }
  const double sleep_us = sleep_total / kSleepReps;
  std::printf(
      "[ThreadPool] 2 threads, spin window %d us: fork-join (both threads work) %.2f us "
      "back-to-back, %.1f us from sleep; empty region %.3f us\n",
      pool.spin_us(), spin_us, sleep_us, empty_us);
  EXPECT_LT(spin_us, 1000.0);
}

}  // namespace
}  // namespace hearth::ops
