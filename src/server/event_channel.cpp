#include "server/event_channel.h"

namespace hearth::server {

void EventChannel::push(const EngineEvent& e) {
  {
    std::lock_guard lock(mu_);
    events_.push_back(e);
    if (e.kind == EngineEvent::Kind::Finished) finished_ = true;
  }
  cv_.notify_one();
}

std::optional<EngineEvent> EventChannel::pop_until(Clock::time_point deadline) {
  std::unique_lock lock(mu_);
  if (!cv_.wait_until(lock, deadline, [&] { return !events_.empty(); })) return std::nullopt;
  EngineEvent e = std::move(events_.front());
  events_.pop_front();
  return e;
}

bool EventChannel::finished() const {
  std::lock_guard lock(mu_);
  return finished_;
}

}  // namespace hearth::server
