// Persistent pool: n_threads-1 workers plus the caller. A parallel region is published by
// writing the job description and bumping a generation counter; workers spin on the counter
// for a bounded time (cheap back-to-back regions), then sleep on a condition variable (an idle
// pool costs no CPU). Tasks are handed out one at a time from an atomic counter. Before
// returning, the caller waits only for workers that joined the region: a worker still asleep
// is excused (its per-worker slot is advanced for it), so the first region after an idle
// period never waits for a wake-up.
#include "ops/thread_pool.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "util/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace hearth::ops {
namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

using Clock = std::chrono::steady_clock;
constexpr int kPureSpinRounds = 16;  // x 64 pauses before spinning starts to yield

int default_spin_us() {
  if (const char* env = std::getenv("HEARTH_SPIN_US")) {
    char* end = nullptr;
    const long v = std::strtol(env, &end, 10);
    if (end != env && v >= 0 && v <= 1000000) return static_cast<int>(v);
  }
  return ThreadPool::kDefaultSpinUs;
}

}  // namespace

struct ThreadPool::Impl {
  int n_threads = 1;
  std::vector<std::thread> workers;

  // Publication: the caller writes the job fields, then bumps `generation` (release).
  alignas(64) std::atomic<uint64_t> generation{0};
  alignas(64) std::atomic<int64_t> next_task{0};
  alignas(64) std::atomic<int> active{0};  // workers not yet done with the current generation
  // Per worker: the last generation it joined or was excused from. A worker joins generation g
  // by moving its slot g-1 -> g; the caller, once out of tasks, excuses workers that have not
  // joined yet by making the same move, so it never waits for a sleeping worker to wake up.
  struct alignas(64) Slot {
    std::atomic<uint64_t> gen{0};
  };
  std::vector<Slot> slots;
  alignas(64) std::atomic<int> sleepers{0};
  std::atomic<bool> failed{false};
  std::atomic<bool> busy{false};  // a region is in progress (re-entrancy guard)
  std::atomic<int> spin_us{ThreadPool::kDefaultSpinUs};
  std::atomic<bool> stop_requested{false};  // set before the final generation bump

  const std::function<void(int64_t, int)>* fn = nullptr;
  int64_t n_tasks = 0;

  std::mutex mu;
  std::condition_variable cv;
  std::mutex err_mu;
  std::exception_ptr error;

  // Runs tasks until the counter is exhausted; captures the first exception.
  void run_tasks(int thread) {
    const auto& f = *fn;
    const int64_t n = n_tasks;
    for (;;) {
      if (failed.load(std::memory_order_relaxed)) return;
      const int64_t t = next_task.fetch_add(1, std::memory_order_relaxed);
      if (t >= n) return;
      try {
        f(t, thread);
      } catch (...) {
        std::lock_guard<std::mutex> lk(err_mu);
        if (!error) error = std::current_exception();
        failed.store(true, std::memory_order_relaxed);
      }
    }
  }

  // Waits until `generation` differs from `seen`; returns the new value.
  uint64_t wait_generation(uint64_t seen) {
    uint64_t g = generation.load(std::memory_order_acquire);
    if (g != seen) return g;
    const int us = spin_us.load(std::memory_order_relaxed);
    if (us > 0) {
      const auto deadline = Clock::now() + std::chrono::microseconds(us);
      // Pure pause-spinning for the first rounds; later rounds also yield so that with more
      // threads than cores a spinning worker does not starve one that still has to check in.
      for (int round = 0;; ++round) {
        for (int i = 0; i < 64; ++i) {
          cpu_relax();
          g = generation.load(std::memory_order_acquire);
          if (g != seen) return g;
        }
        if (Clock::now() >= deadline) break;
        if (round >= kPureSpinRounds) std::this_thread::yield();
      }
    }
    // Sleep. The seq_cst increment of `sleepers` pairs with the publisher's seq_cst store of
    // `generation` and load of `sleepers`: either it sees a sleeper and notifies under the
    // mutex, or we see the new generation in the predicate.
    sleepers.fetch_add(1, std::memory_order_seq_cst);
    {
      std::unique_lock<std::mutex> lk(mu);
      cv.wait(lk, [&] { return generation.load(std::memory_order_seq_cst) != seen; });
      g = generation.load(std::memory_order_acquire);
    }
    sleepers.fetch_sub(1, std::memory_order_relaxed);
    return g;
  }

  void worker_main(int thread) {
    uint64_t seen = 0;
    for (;;) {
      seen = wait_generation(seen);
      if (stop_requested.load(std::memory_order_acquire)) return;
      uint64_t expected = seen - 1;
      if (slots[static_cast<size_t>(thread - 1)].gen.compare_exchange_strong(
              expected, seen, std::memory_order_acq_rel, std::memory_order_relaxed)) {
        run_tasks(thread);
        active.fetch_sub(1, std::memory_order_release);
      }
    }
  }

  void publish() {
    generation.fetch_add(1, std::memory_order_seq_cst);
    if (sleepers.load(std::memory_order_seq_cst) > 0) {
      std::lock_guard<std::mutex> lk(mu);
      cv.notify_all();
    }
  }
};

ThreadPool::ThreadPool(int n_threads) : impl_(new Impl) {
  if (n_threads < 1) n_threads = 1;
  impl_->n_threads = n_threads;
  impl_->spin_us.store(default_spin_us(), std::memory_order_relaxed);
  impl_->workers.reserve(static_cast<size_t>(n_threads - 1));
  impl_->slots = std::vector<Impl::Slot>(static_cast<size_t>(n_threads - 1));
  try {
    for (int i = 1; i < n_threads; ++i)
      impl_->workers.emplace_back([this, i] { impl_->worker_main(i); });
  } catch (...) {
    impl_->stop_requested.store(true, std::memory_order_release);
    impl_->publish();
    for (auto& w : impl_->workers) w.join();
    delete impl_;
    throw;
  }
}

ThreadPool::~ThreadPool() {
  impl_->stop_requested.store(true, std::memory_order_release);
  impl_->publish();
  for (auto& w : impl_->workers) w.join();
  delete impl_;
}

int ThreadPool::size() const {
  return impl_->n_threads;
}

void ThreadPool::set_spin_us(int us) {
  impl_->spin_us.store(us < 0 ? 0 : us, std::memory_order_relaxed);
}

int ThreadPool::spin_us() const {
  return impl_->spin_us.load(std::memory_order_relaxed);
}

void ThreadPool::parallel_for(int64_t n_tasks,
                              const std::function<void(int64_t task, int thread)>& fn) {
  if (n_tasks <= 0) return;
  Impl& p = *impl_;
  if (p.busy.exchange(true, std::memory_order_acquire))
    fail("ThreadPool::parallel_for: nested or concurrent call (the pool is not re-entrant)");
  struct Release {
    std::atomic<bool>& b;
    ~Release() { b.store(false, std::memory_order_release); }
  } release{p.busy};

  if (p.workers.empty() || n_tasks == 1) {
    for (int64_t t = 0; t < n_tasks; ++t) fn(t, 0);
    return;
  }

  p.fn = &fn;
  p.n_tasks = n_tasks;
  p.next_task.store(0, std::memory_order_relaxed);
  p.failed.store(false, std::memory_order_relaxed);
  p.error = nullptr;
  p.active.store(static_cast<int>(p.workers.size()), std::memory_order_relaxed);
  p.publish();

  p.run_tasks(0);

  // Excuse the workers that have not joined yet (asleep or slow): no task is left for them.
  const uint64_t g = p.generation.load(std::memory_order_relaxed);
  for (auto& slot : p.slots) {
    uint64_t expected = g - 1;
    if (slot.gen.compare_exchange_strong(expected, g, std::memory_order_acq_rel,
                                         std::memory_order_relaxed))
      p.active.fetch_sub(1, std::memory_order_relaxed);
  }

  // Wait for every worker to check out of this generation (spin, then yield: with more
  // threads than cores a worker may need our core to finish).
  int spins = 0;
  while (p.active.load(std::memory_order_acquire) != 0) {
    if (++spins < 256) {
      cpu_relax();
    } else {
      std::this_thread::yield();
    }
  }
  p.fn = nullptr;
  if (p.error) {
    std::exception_ptr e = p.error;
    p.error = nullptr;
    std::rethrow_exception(e);
  }
}

}  // namespace hearth::ops
