#include "sampling/grammar_stack_set.h"

#include <algorithm>

namespace hearth {

uint64_t stack_hash(std::span<const uint32_t> stack) {
  uint64_t h = kStackHashSeed;
  for (uint32_t f : stack) h = stack_hash_push(h, f);
  return h;
}

void StackSet::clear() {
  frames_.clear();
  ends_.clear();
  hashes_.clear();
  // A step that once needed a big index should not make every later clear() pay for it.
  if (slots_.size() > 64)
    slots_.assign(16, 0);
  else
    std::fill(slots_.begin(), slots_.end(), 0);
}

std::span<const uint32_t> StackSet::stack(size_t i) const {
  const size_t begin = i == 0 ? 0 : ends_[i - 1];
  return std::span(frames_).subspan(begin, ends_[i] - begin);
}

void StackSet::rehash(size_t n_slots) {
  slots_.assign(n_slots, 0);
  const size_t mask = n_slots - 1;
  for (size_t i = 0; i < hashes_.size(); ++i) {
    size_t s = hashes_[i] & mask;
    while (slots_[s] != 0) s = (s + 1) & mask;
    slots_[s] = static_cast<uint32_t>(i + 1);
  }
}

std::pair<uint32_t, bool> StackSet::find_or_insert(std::span<const uint32_t> stack, uint64_t hash) {
  if (slots_.empty()) slots_.assign(16, 0);
  if ((hashes_.size() + 1) * 2 > slots_.size()) rehash(slots_.size() * 2);
  const size_t mask = slots_.size() - 1;
  size_t s = hash & mask;
  for (; slots_[s] != 0; s = (s + 1) & mask) {
    const size_t i = slots_[s] - 1;
    if (hashes_[i] == hash && std::ranges::equal(this->stack(i), stack))
      return {static_cast<uint32_t>(i), false};
  }
  frames_.insert(frames_.end(), stack.begin(), stack.end());
  ends_.push_back(static_cast<uint32_t>(frames_.size()));
  hashes_.push_back(hash);
  slots_[s] = static_cast<uint32_t>(hashes_.size());
  return {static_cast<uint32_t>(hashes_.size() - 1), true};
}

}  // namespace hearth
