// A set of parse stacks (sequences of grammar positions), each kept once: a flat store with an
// open-addressing index on a hash of the content, compared in full on a hash match so that
// deduplication is exact. Reused across steps: clear() keeps the memory.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace hearth {

// Hash of a stack, built frame by frame so that a stack being grown keeps its prefixes' hashes.
inline constexpr uint64_t kStackHashSeed = 0x9E3779B97F4A7C15ull;
inline uint64_t stack_hash_push(uint64_t h, uint32_t frame) {
  h = (h ^ frame) * 0xBF58476D1CE4E5B9ull;
  return h ^ (h >> 31);
}
uint64_t stack_hash(std::span<const uint32_t> stack);

class StackSet {
 public:
  void clear();
  // Adds `stack` (whose stack_hash is `hash`) unless an equal one is in; true when added.
  bool insert(std::span<const uint32_t> stack, uint64_t hash) {
    return find_or_insert(stack, hash).second;
  }
  // The index of the equal stack (stacks are numbered in the order added), and whether it was
  // added by this call.
  std::pair<uint32_t, bool> find_or_insert(std::span<const uint32_t> stack, uint64_t hash);
  size_t size() const { return hashes_.size(); }

 private:
  std::span<const uint32_t> stack(size_t i) const;
  void rehash(size_t n_slots);

  std::vector<uint32_t> frames_;
  std::vector<uint32_t> ends_;
  std::vector<uint64_t> hashes_;
  std::vector<uint32_t> slots_;  // 1 + the index of a stack; 0 = free
};

}  // namespace hearth
