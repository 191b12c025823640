#include "sampling/penalty_state.h"

namespace hearth {

PenaltyState::PenaltyState(int32_t n_vocab, int32_t last_n)
    : last_n_(last_n),
      counts_(static_cast<size_t>(n_vocab), 0),
      active_pos_(static_cast<size_t>(n_vocab), -1),
      ring_(last_n > 0 ? static_cast<size_t>(last_n) : 0) {}

void PenaltyState::clear() {
  for (int32_t t : active_) {
    counts_[static_cast<size_t>(t)] = 0;
    active_pos_[static_cast<size_t>(t)] = -1;
  }
  active_.clear();
  ring_head_ = ring_size_ = 0;
}

void PenaltyState::add(int32_t token, int32_t delta) {
  const auto t = static_cast<size_t>(token);
  const int32_t before = counts_[t];
  counts_[t] = before + delta;
  if (before == 0) {
    active_pos_[t] = static_cast<int32_t>(active_.size());
    active_.push_back(token);
  } else if (counts_[t] == 0) {  // swap-remove from the active list
    const auto pos = static_cast<size_t>(active_pos_[t]);
    const int32_t moved = active_.back();
    active_[pos] = moved;
    active_pos_[static_cast<size_t>(moved)] = static_cast<int32_t>(pos);
    active_.pop_back();
    active_pos_[t] = -1;
  }
}

void PenaltyState::push(int32_t token) {
  if (last_n_ == 0) return;
  if (last_n_ < 0) return add(token, 1);
  if (ring_size_ == ring_.size()) {  // the oldest leaves the window
    add(ring_[ring_head_], -1);
    ring_[ring_head_] = token;
    ring_head_ = (ring_head_ + 1) % ring_.size();
  } else {
    ring_[(ring_head_ + ring_size_) % ring_.size()] = token;
    ++ring_size_;
  }
  add(token, 1);
}

}  // namespace hearth
