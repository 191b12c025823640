#include "tools/membw.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

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

constexpr int64_t kChunks = 256;  // tasks per pass: dynamic balance over the threads

// Words [first, last) of chunk c of n: the same split for the page touch and every pass.
std::pair<size_t, size_t> chunk_words(size_t n, int64_t c) {
  return {n * static_cast<size_t>(c) / kChunks, n * static_cast<size_t>(c + 1) / kChunks};
}

size_t probe_bytes(size_t bytes) {
  if (bytes < kChunks * sizeof(uint64_t))
    fail("memory bandwidth probe: {} bytes is too small a buffer", bytes);
  return bytes / sizeof(uint64_t) * sizeof(uint64_t);
}

}  // namespace

ReadBandwidthProbe::ReadBandwidthProbe(ops::ThreadPool& pool, size_t bytes)
    : pool_(pool), mem_(AnonymousMemory::accounted(probe_bytes(bytes), "membw")) {
  auto* data = reinterpret_cast<uint64_t*>(mem_.data());
  const size_t n = mem_.size() / sizeof(uint64_t);
  pool_.parallel_for(kChunks, [&](int64_t c, int) {  // touch pages from the reading threads
    const auto [b, e] = chunk_words(n, c);
    for (size_t i = b; i < e; ++i) data[i] = i * 0x9e3779b97f4a7c15ULL;
  });
}

double ReadBandwidthProbe::measure(int reps) {
  const auto* data = reinterpret_cast<const uint64_t*>(mem_.data());
  const size_t n = mem_.size() / sizeof(uint64_t);
  std::atomic<uint64_t> sink{0};
  double best = 0.0;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    pool_.parallel_for(kChunks, [&](int64_t c, int) {
      const auto [b, e] = chunk_words(n, c);
      sink.fetch_add(read_sum(data + b, e - b), std::memory_order_relaxed);
    });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, static_cast<double>(n * sizeof(uint64_t)) / s);
  }
  if (sink.load() == 42) std::memset(&best, 0, 0);  // keep the sums observable
  return best;
}

double measure_read_bandwidth(ops::ThreadPool& pool, size_t bytes, int reps) {
  ReadBandwidthProbe probe(pool, bytes);
  return probe.measure(reps);
}

}  // namespace hearth::tools
