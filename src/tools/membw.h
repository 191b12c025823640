// A built-in probe of the machine's memory read bandwidth, the roofline for decoding.
#pragma once

#include <cstddef>

#include "ops/thread_pool.h"
#include "util/anonymous_memory.h"

namespace hearth::tools {

// Keeps its buffer (much larger than the caches, on huge pages as the repacked weights are) so
// that it can be read again beside each timed run: on a shared host the bandwidth drifts (one
// 2-core VM read 35 and 65 GB/s minutes apart), and a decode figure is only comparable with a
// probe taken in the same spell.
class ReadBandwidthProbe {
 public:
  ReadBandwidthProbe(ops::ThreadPool& pool, size_t bytes = size_t{1} << 30);
  // Best-of-`reps` read bandwidth in bytes/s, every thread of the pool reading in parallel.
  double measure(int reps = 5);

 private:
  ops::ThreadPool& pool_;
  AnonymousMemory mem_;
};

// One probe, measured once.
double measure_read_bandwidth(ops::ThreadPool& pool, size_t bytes = size_t{1} << 30, int reps = 5);

}  // namespace hearth::tools
