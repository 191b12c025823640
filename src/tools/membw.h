// A built-in probe of the machine's memory read bandwidth, the roofline for decoding.
#pragma once

#include <cstddef>

#include "ops/thread_pool.h"

namespace hearth::tools {

// Best-of-`reps` read bandwidth in bytes/s over a `bytes`-sized buffer (much larger than the
// caches), read by every thread of `pool` in parallel.
double measure_read_bandwidth(ops::ThreadPool& pool, size_t bytes = size_t{1} << 30, int reps = 5);

}  // namespace hearth::tools
