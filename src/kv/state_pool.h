// The recurrent-state store of a hybrid model: a fixed number of fixed-size f32 slots (each one
// sequence's or one snapshot's state over every recurrent layer, model/state_arena.h) carved from
// one lazily-committed mapping, so slots never used cost no memory. A slot has one owner at a
// time — a running sequence's working slot or a snapshot of the prefix cache — and is never
// shared: restoring a snapshot copies it into the sequence's own slot.
// Two budgets share the pool: `working` slots (one per sequence that can hold state at once)
// and at most `snapshots` slots for snapshots; the KV manager keeps the second within its count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "model/state_arena.h"
#include "util/anonymous_memory.h"

namespace hearth {

class StatePool {
 public:
  // `layout`: StateArena::layout_for(hp) (no slots when the model has no recurrent layers).
  StatePool(const StateArena& layout, int32_t working, int32_t snapshots);
  StatePool(const StatePool&) = delete;
  StatePool& operator=(const StatePool&) = delete;

  const StateArena& arena() const { return arena_; }
  bool enabled() const { return arena_.slot_floats > 0; }
  size_t slot_bytes() const { return arena_.slot_bytes(); }
  int32_t n_slots() const { return arena_.n_slots; }
  int32_t n_free() const { return static_cast<int32_t>(free_.size()); }
  int32_t snapshot_capacity() const { return snapshot_capacity_; }
  int32_t n_snapshots() const { return n_snapshots_; }

  // A working slot, all zeros (the state before any token); nullopt when none is free.
  std::optional<int32_t> allocate_working();
  // A snapshot slot (contents undefined); nullopt when `snapshots` are taken or none is free.
  std::optional<int32_t> allocate_snapshot();
  void release(int32_t slot);  // either kind; back to the free list
  void copy(int32_t dst, int32_t src);

 private:
  void check(int32_t slot) const;

  StateArena arena_;
  AnonymousMemory mem_;
  std::vector<int32_t> free_;
  std::vector<uint8_t> kind_;  // per slot: 0 free, 1 working, 2 snapshot
  int32_t snapshot_capacity_ = 0;
  int32_t n_snapshots_ = 0;
};

}  // namespace hearth
