#include "ops/region_profile.h"

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <utility>

namespace hearth::ops {
namespace {

std::atomic<bool> g_on{false};

// Totals per (kind, bytes). Regions are issued by the thread that runs a forward pass, but a
// server may run passes from more than one, so recording takes a lock (only while profiling).
struct Totals {
  std::mutex mu;
  std::map<std::pair<RegionKind, size_t>, RegionStat> by_key;
};
Totals& totals() {
  static Totals t;
  return t;
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

void set_region_profiling(bool on) {
  g_on.store(on, std::memory_order_relaxed);
}

bool region_profiling() {
  return g_on.load(std::memory_order_relaxed);
}

std::vector<RegionStat> region_profile() {
  Totals& t = totals();
  std::lock_guard<std::mutex> lk(t.mu);
  std::vector<RegionStat> out;
  out.reserve(t.by_key.size());
  for (const auto& [key, stat] : t.by_key) out.push_back(stat);
  return out;
}

void reset_region_profile() {
  Totals& t = totals();
  std::lock_guard<std::mutex> lk(t.mu);
  t.by_key.clear();
}

RegionTimer::RegionTimer(RegionKind kind, size_t bytes) : kind_(kind), bytes_(bytes) {
  if (region_profiling()) start_ns_ = now_ns();
}

RegionTimer::~RegionTimer() {
  if (start_ns_ < 0) return;
  const double s = static_cast<double>(now_ns() - start_ns_) * 1e-9;
  Totals& t = totals();
  std::lock_guard<std::mutex> lk(t.mu);
  RegionStat& st = t.by_key[{kind_, bytes_}];
  st.kind = kind_;
  st.bytes = bytes_;
  ++st.calls;
  st.seconds += s;
}

}  // namespace hearth::ops
