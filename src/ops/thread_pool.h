// A persistent thread pool tuned for decode latency: a token's forward pass issues many small
// parallel regions, so workers spin briefly before sleeping and wake-up cost stays low.
#pragma once

#include <cstdint>
#include <functional>

namespace hearth::ops {

class ThreadPool {
 public:
  // n_threads includes the calling thread (1 = run everything inline).
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const;

  // How long an idle worker spins (pause/yield) waiting for the next region before it sleeps
  // on a condition variable. Default kDefaultSpinUs, overridable by HEARTH_SPIN_US; 0 = sleep
  // at once.
  static constexpr int kDefaultSpinUs = 200;
  void set_spin_us(int us);
  int spin_us() const;

  // Runs fn(task, thread_index) for task in [0, n_tasks), distributing tasks dynamically over
  // all threads (the caller participates, as thread 0); returns when all are done. Each task
  // runs exactly once. With one thread (or one task) everything runs inline on the caller.
  // If tasks throw, tasks not yet started are skipped and the first exception is rethrown here.
  // Not re-entrant: a call from inside a task (or concurrently from another thread) throws
  // hearth::Error.
  void parallel_for(int64_t n_tasks, const std::function<void(int64_t task, int thread)>& fn);

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace hearth::ops
