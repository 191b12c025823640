#include "ops/share_split.h"

#include <array>
#include <atomic>
#include <memory>

#include "util/error.h"

namespace hearth::ops {
namespace {

// One thread's share of the slices, [front, back) packed in one word so that the owner taking
// from the front and a thief taking from the back can never both take the last slice.
struct alignas(64) Share {
  std::atomic<uint64_t> front_back{0};

  static uint64_t pack(uint32_t front, uint32_t back) {
    return front | (static_cast<uint64_t>(back) << 32);
  }
  void set(int64_t front, int64_t back) {
    front_back.store(pack(static_cast<uint32_t>(front), static_cast<uint32_t>(back)),
                     std::memory_order_relaxed);
  }
  // Takes the first (from_back = false) or last slice left; false when none is.
  bool take(bool from_back, int64_t& slice) {
    uint64_t v = front_back.load(std::memory_order_relaxed);
    for (;;) {
      const auto front = static_cast<uint32_t>(v), back = static_cast<uint32_t>(v >> 32);
      if (front >= back) return false;
      const uint64_t next = from_back ? pack(front, back - 1) : pack(front + 1, back);
      if (front_back.compare_exchange_weak(v, next, std::memory_order_relaxed)) {
        slice = from_back ? back - 1 : front;
        return true;
      }
    }
  }
};

}  // namespace

void parallel_shares(ThreadPool& pool, int64_t n_slices,
                     const std::function<void(int64_t slice, int thread)>& fn) {
  if (n_slices <= 0) return;
  if (n_slices > int64_t{UINT32_MAX}) fail("parallel_shares: {} slices is too many", n_slices);
  const int n = pool.size();
  if (n == 1 || n_slices == 1) {
    for (int64_t s = 0; s < n_slices; ++s) fn(s, 0);
    return;
  }
  // On the stack for the usual thread counts: a decode step runs ~150 regions, none of which
  // should allocate.
  constexpr int kOnStack = 8;
  std::array<Share, kOnStack> on_stack;
  std::unique_ptr<Share[]> on_heap;
  if (n > kOnStack) on_heap = std::make_unique<Share[]>(static_cast<size_t>(n));
  Share* const shares = n > kOnStack ? on_heap.get() : on_stack.data();
  for (int t = 0; t < n; ++t) shares[t].set(n_slices * t / n, n_slices * (t + 1) / n);
  // One task per thread; the pool's `thread` (not the task) names the share a thread owns. A
  // thread that gets a second task (its peer had not joined yet) finds its share empty and steals.
  pool.parallel_for(n, [&](int64_t, int thread) {
    int64_t s = 0;
    while (shares[thread].take(false, s)) fn(s, thread);
    for (int k = 1; k < n; ++k) {
      Share& other = shares[(thread + k) % n];
      while (other.take(true, s)) fn(s, thread);
    }
  });
}

}  // namespace hearth::ops
