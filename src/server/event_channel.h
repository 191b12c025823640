// The hand-off from the engine thread to an HTTP handler thread: the engine's on_event pushes
// (never blocks for long), the handler waits. Shared by both sides, so either may go first.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>

#include "engine/request.h"

namespace hearth::server {

class EventChannel {
 public:
  using Clock = std::chrono::steady_clock;

  void push(const EngineEvent& e);
  // The next event, or nullopt when `deadline` passes first.
  std::optional<EngineEvent> pop_until(Clock::time_point deadline);
  bool finished() const;  // the Finished event has been pushed

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<EngineEvent> events_;
  bool finished_ = false;
};

}  // namespace hearth::server
