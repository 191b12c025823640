#include "kv/state_pool.h"

#include <algorithm>
#include <cstring>

#include "util/error.h"

namespace hearth {

namespace {
constexpr uint8_t kFree = 0, kWorking = 1, kSnapshot = 2;
}  // namespace

StatePool::StatePool(const StateArena& layout, int32_t working, int32_t snapshots)
    : arena_(layout) {
  arena_.base = nullptr;
  arena_.n_slots = 0;
  if (!enabled()) return;
  if (working <= 0 || snapshots < 0)
    fail("state pool: {} working, {} snapshot slots", working, snapshots);
  snapshot_capacity_ = snapshots;
  arena_.n_slots = working + snapshots;
  // Huge pages: a slot is megabytes written whole (zeroed, or a snapshot copied in), and on a
  // Qwen3.5-0.8B shape (20 MB a slot) first-touching it in 4 KiB pages made the first request's
  // first token 165 ms instead of 57 ms.
  mem_ = AnonymousMemory::accounted(arena_.slot_bytes() * static_cast<size_t>(arena_.n_slots),
                                    "recurrent state pool");
  arena_.base = reinterpret_cast<float*>(mem_.data());
  kind_.assign(static_cast<size_t>(arena_.n_slots), kFree);
  free_.reserve(static_cast<size_t>(arena_.n_slots));
  for (int32_t s = arena_.n_slots - 1; s >= 0; --s) free_.push_back(s);
}

void StatePool::check(int32_t slot) const {
  if (slot < 0 || slot >= arena_.n_slots) fail("state slot {} is out of range", slot);
}

std::optional<int32_t> StatePool::allocate_working() {
  if (free_.empty()) return std::nullopt;
  const int32_t s = free_.back();
  free_.pop_back();
  kind_[static_cast<size_t>(s)] = kWorking;
  std::memset(arena_.slot(s), 0, arena_.slot_bytes());
  return s;
}

std::optional<int32_t> StatePool::allocate_snapshot() {
  if (free_.empty() || n_snapshots_ >= snapshot_capacity_) return std::nullopt;
  const int32_t s = free_.back();
  free_.pop_back();
  kind_[static_cast<size_t>(s)] = kSnapshot;
  ++n_snapshots_;
  return s;
}

void StatePool::release(int32_t slot) {
  check(slot);
  uint8_t& k = kind_[static_cast<size_t>(slot)];
  if (k == kFree) fail("state slot {} released while free", slot);
  if (k == kSnapshot) --n_snapshots_;
  k = kFree;
  free_.push_back(slot);
}

void StatePool::copy(int32_t dst, int32_t src) {
  check(dst);
  check(src);
  if (kind_[static_cast<size_t>(dst)] == kFree || kind_[static_cast<size_t>(src)] == kFree)
    fail("state slot copy {} <- {} touches a free slot", dst, src);
  if (dst != src) std::memcpy(arena_.slot(dst), arena_.slot(src), arena_.slot_bytes());
}

}  // namespace hearth
