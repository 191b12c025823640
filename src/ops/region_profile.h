// Opt-in timing of the parallel regions a forward pass issues (`hearth bench --breakdown`):
// every matmul region under the bytes of weights it reads, every attention region, so that a
// decode step's time splits into its matmuls (and the bandwidth they reach), its attention, and
// the rest (per-token work on one thread, hand-offs). Off by default, when a region pays one
// relaxed load for it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace hearth::ops {

enum class RegionKind { Matmul, Attention };

struct RegionStat {
  RegionKind kind = RegionKind::Matmul;
  size_t bytes = 0;  // weight bytes a matmul region reads (0 for attention)
  int64_t calls = 0;
  double seconds = 0;
};

void set_region_profiling(bool on);
bool region_profiling();
// The regions timed since the last reset, one entry per (kind, bytes), matmuls first, by bytes.
std::vector<RegionStat> region_profile();
void reset_region_profile();

// Times one region from construction to destruction, when profiling was on at construction.
class RegionTimer {
 public:
  RegionTimer(RegionKind kind, size_t bytes);
  ~RegionTimer();
  RegionTimer(const RegionTimer&) = delete;
  RegionTimer& operator=(const RegionTimer&) = delete;

 private:
  RegionKind kind_;
  size_t bytes_;
  int64_t start_ns_ = -1;  // -1: not timing
};

}  // namespace hearth::ops
