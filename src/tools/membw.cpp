#include "tools/membw.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

#include "util/anonymous_memory.h"
#include "util/error.h"

namespace hearth::tools {
namespace {

// Sums 64-bit words with four independent accumulators: cheap enough that the loads, not the
// adds, are the limit. The result is consumed so the reads cannot be optimised away.
uint64_t read_sum(const uint64_t* p, size_t n) {
  uint64_t a = 0, b = 0, c = 0, d = 0;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    a += p[i];
    b ^= p[i + 1];
    c += p[i + 2];
    d ^= p[i + 3];
  }
  for (; i < n; ++i) a += p[i];
  return a + b + c + d;
}

}  // namespace

double measure_read_bandwidth(ops::ThreadPool& pool, size_t bytes, int reps) {
  const size_t n = bytes / sizeof(uint64_t);
  // Huge pages, as the repacked weights have (model/weights.cpp): the figure decode is
  // compared against.
  const AnonymousMemory mem = AnonymousMemory::accounted(n * sizeof(uint64_t), "membw");
  auto* data = reinterpret_cast<uint64_t*>(mem.data());
  const int64_t chunks = 256;
  pool.parallel_for(chunks, [&](int64_t c, int) {  // touch pages from the reading threads
    const size_t b = n * static_cast<size_t>(c) / chunks,
                 e = n * static_cast<size_t>(c + 1) / chunks;
    for (size_t i = b; i < e; ++i) data[i] = i * 0x9e3779b97f4a7c15ULL;
  });
  std::atomic<uint64_t> sink{0};
  double best = 0.0;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    pool.parallel_for(chunks, [&](int64_t c, int) {
      const size_t b = n * static_cast<size_t>(c) / chunks,
                   e = n * static_cast<size_t>(c + 1) / chunks;
      sink.fetch_add(read_sum(data + b, e - b), std::memory_order_relaxed);
    });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, static_cast<double>(n * sizeof(uint64_t)) / s);
  }
  if (sink.load() == 42) std::memset(&best, 0, 0);  // keep the sums observable
  return best;
}

}  // namespace hearth::tools
