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

  // Runs fn(task, thread_index) for task in [0, n_tasks), distributing tasks dynamically over
  // all threads (the caller participates); returns when all are done. Not re-entrant.
  void parallel_for(int64_t n_tasks, const std::function<void(int64_t task, int thread)>& fn);

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace hearth::ops
