#include "sampling/dry_state.h"

#include <algorithm>

namespace hearth {

DryState::DryState(int32_t allowed_length, int32_t last_n)
    : allowed_(allowed_length), last_n_(last_n), k_(allowed_length >= 2 ? 2 : 1) {}

void DryState::clear() {
  tokens_.clear();
  breaker_.clear();
  index_.clear();
  live_.clear();
}

size_t DryState::window_start(size_t n) const {
  if (last_n_ < 0 || n <= static_cast<size_t>(last_n_)) return 0;
  return n - static_cast<size_t>(last_n_);
}

void DryState::push(int32_t token, bool is_breaker) {
  const size_t last = tokens_.size();
  tokens_.push_back(token);
  breaker_.push_back(is_breaker ? 1 : 0);
  next_.clear();
  const bool valid = !is_breaker && (k_ == 1 || (last >= 1 && !breaker_[last - 1]));
  if (valid) {
    const uint64_t key =
        k_ == 1 ? static_cast<uint32_t>(token)
                : (static_cast<uint64_t>(static_cast<uint32_t>(tokens_[last - 1])) << 32) |
                      static_cast<uint32_t>(token);
    Ends& e = index_[key];
    const auto ws = static_cast<int32_t>(window_start(last + 1));
    while (e.first < e.pos.size() && e.pos[e.first] < ws) ++e.first;
    // Each earlier occurrence i matches K tokens for sure; if i - 1 was a live match of the
    // previous end, this one is one longer.
    size_t j = 0;
    for (size_t q = e.first; q < e.pos.size(); ++q) {
      const int32_t i = e.pos[q];
      while (j < live_.size() && live_[j].first < i - 1) ++j;
      const int32_t prev = j < live_.size() && live_[j].first == i - 1 ? live_[j].second : k_ - 1;
      next_.emplace_back(i, prev + 1);
    }
    e.pos.push_back(static_cast<int32_t>(last));
  }
  live_.swap(next_);
}

std::span<const DryMatch> DryState::matches() {
  out_.clear();
  const size_t n = tokens_.size();
  const auto ws = static_cast<int64_t>(window_start(n));
  for (const auto& [i, m] : live_) {
    const auto capped = static_cast<int32_t>(std::min<int64_t>(m, i - ws + 1));
    if (capped < allowed_ || capped < 1) continue;
    const auto next = static_cast<size_t>(i) + 1;
    if (breaker_[next]) continue;
    out_.push_back({tokens_[next], capped});
  }
  std::sort(out_.begin(), out_.end(), [](const DryMatch& a, const DryMatch& b) {
    return a.token != b.token ? a.token < b.token : a.length > b.length;
  });
  out_.erase(std::unique(out_.begin(), out_.end(),
                         [](const DryMatch& a, const DryMatch& b) { return a.token == b.token; }),
             out_.end());
  return out_;
}

}  // namespace hearth
