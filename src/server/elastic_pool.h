// The HTTP worker threads: started as connections need them, up to a cap.
//
// Each connection holds a worker from accept to close (keep-alive included). cpp-httplib's own
// pool is fixed-size, so a fixed few stalled clients could leave /health waiting in the queue;
// a pool that grows to the cap keeps answering while it has room, without idling hundreds of
// threads on a server nobody uses.
#pragma once

#include <httplib.h>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace hearth::server {

class ElasticPool final : public httplib::TaskQueue {
 public:
  explicit ElasticPool(size_t max_threads);
  ~ElasticPool() override;
  ElasticPool(const ElasticPool&) = delete;
  ElasticPool& operator=(const ElasticPool&) = delete;

  // Runs `fn` on an idle worker, on a new one while under the cap, else when one frees up.
  void enqueue(std::function<void()> fn) override;
  // Runs what is queued, then joins every worker.
  void shutdown() override;

  size_t threads() const;

 private:
  void work();

  const size_t max_threads_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;
  size_t idle_ = 0;
  bool stopping_ = false;
};

}  // namespace hearth::server
