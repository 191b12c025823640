#include "server/elastic_pool.h"

#include <algorithm>

namespace hearth::server {

ElasticPool::ElasticPool(size_t max_threads) : max_threads_(std::max<size_t>(1, max_threads)) {}

ElasticPool::~ElasticPool() {
  shutdown();
}

void ElasticPool::enqueue(std::function<void()> fn) {
  {
    std::lock_guard lock(mu_);
    jobs_.push_back(std::move(fn));
    // Idle workers take queued jobs first; a new thread only for what they cannot.
    if (jobs_.size() > idle_ && threads_.size() < max_threads_)
      threads_.emplace_back([this] { work(); });
  }
  cv_.notify_one();
}

void ElasticPool::shutdown() {
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    threads.swap(threads_);
  }
  cv_.notify_all();
  for (std::thread& t : threads) t.join();
}

size_t ElasticPool::threads() const {
  std::lock_guard lock(mu_);
  return threads_.size();
}

void ElasticPool::work() {
  std::unique_lock lock(mu_);
  for (;;) {
    ++idle_;
    cv_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
    --idle_;
    if (jobs_.empty()) return;  // stopping, nothing left to run
    std::function<void()> job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    try {
      job();
    } catch (...) {
      // A connection's failure must not take the worker (and the process) with it; the
      // connection itself is closed by the job's own cleanup.
    }
    lock.lock();
  }
}

}  // namespace hearth::server
