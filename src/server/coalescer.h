// Token coalescing for streamed replies: content deltas are held and sent together when the
// held text reaches `max_chars`, when the oldest held text is `window_ms` old, before any
// non-content event, and at the end. Fewer SSE frames for the same text; 0/0 = off.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace hearth::server {

struct CoalesceOptions {
  size_t max_chars = 24;  // bytes of held text that force a flush; 0: no size threshold
  int window_ms = 50;     // longest a delta is held; 0: no time window
  bool enabled() const { return max_chars > 0 || window_ms > 0; }
};

class Coalescer {
 public:
  using Clock = std::chrono::steady_clock;

  // `enabled` false (e.g. per-token logprobs requested): every delta goes out at once.
  Coalescer(CoalesceOptions options, bool enabled);

  // Adds a delta; returns the text to send now, or nullopt to hold it.
  std::optional<std::string> add(std::string_view text, Clock::time_point now);
  // Returns the held text when its window has passed.
  std::optional<std::string> poll(Clock::time_point now);
  // Everything held (possibly empty).
  std::string flush();
  // When the held text must go out; nullopt when nothing is held or there is no window.
  std::optional<Clock::time_point> deadline() const;
  bool holding() const { return !held_.empty(); }

 private:
  CoalesceOptions opt_;
  bool enabled_;
  std::string held_;
  Clock::time_point since_{};
};

}  // namespace hearth::server
