#include "server/coalescer.h"

namespace hearth::server {

Coalescer::Coalescer(CoalesceOptions options, bool enabled)
    : opt_(options), enabled_(enabled && options.enabled()) {}

std::optional<std::string> Coalescer::add(std::string_view text, Clock::time_point now) {
  if (text.empty()) return poll(now);
  if (!enabled_) return std::string(text);
  if (held_.empty()) since_ = now;
  held_.append(text);
  if (opt_.max_chars > 0 && held_.size() >= opt_.max_chars) return flush();
  return poll(now);
}

std::optional<std::string> Coalescer::poll(Clock::time_point now) {
  if (held_.empty()) return std::nullopt;
  if (opt_.window_ms > 0 && now - since_ >= std::chrono::milliseconds(opt_.window_ms))
    return flush();
  return std::nullopt;
}

std::string Coalescer::flush() {
  std::string out;
  out.swap(held_);
  return out;
}

std::optional<Coalescer::Clock::time_point> Coalescer::deadline() const {
  if (held_.empty() || opt_.window_ms <= 0) return std::nullopt;
  return since_ + std::chrono::milliseconds(opt_.window_ms);
}

}  // namespace hearth::server
