// A split of a streaming parallel loop: each thread owns one contiguous share of the slices and
// takes it front to back, so it reads one long stream from memory; a thread done with its own
// share takes slices from the back of another's, so a thread that joins late (or is descheduled)
// holds nobody up. Used where the loop is bound by memory bandwidth and every new stream costs
// a hardware prefetcher's ramp-up (decode's matmuls, ops/matmul.cpp).
#pragma once

#include <cstdint>
#include <functional>

#include "ops/thread_pool.h"

namespace hearth::ops {

// Runs fn(slice, thread) exactly once for every slice in [0, n_slices). With one thread, in order.
void parallel_shares(ThreadPool& pool, int64_t n_slices,
                     const std::function<void(int64_t slice, int thread)>& fn);

}  // namespace hearth::ops
