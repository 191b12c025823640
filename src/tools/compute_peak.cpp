#include "tools/compute_peak.h"

#include <algorithm>
#include <atomic>
#include <chrono>

#include "ops/cpu_features.h"
#include "tools/compute_peak_kernels.h"

namespace hearth::tools {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Many small tasks, so every thread stays busy to the end; the rate is all their operations
// over the region's wall time.
double rate(ops::ThreadPool& pool, double (*loop)(int64_t), double seconds, int reps) {
  const int64_t kTasks = 16 * pool.size();
  const auto t0 = Clock::now();
  const double probe_ops = loop(20000);
  const double single = probe_ops / std::max(seconds_since(t0), 1e-9);
  const auto iters = static_cast<int64_t>(
      std::max(1.0, seconds * single * pool.size() / kTasks / (probe_ops / 20000)));
  double best = 0;
  for (int r = 0; r < reps; ++r) {
    std::atomic<int64_t> ops_x1000{0};
    const auto start = Clock::now();
    pool.parallel_for(kTasks, [&](int64_t, int) {
      ops_x1000.fetch_add(static_cast<int64_t>(loop(iters) / 1000), std::memory_order_relaxed);
    });
    best = std::max(best, static_cast<double>(ops_x1000.load()) * 1000 / seconds_since(start));
  }
  return best;
}

}  // namespace

ComputePeak measure_compute_peak(ops::ThreadPool& pool, double seconds, int reps) {
  ComputePeak p;
  if (ops::simd_level() < ops::SimdLevel::Avx2) return p;
  p.f32 = rate(pool, detail::avx2::peak_f32_fma, seconds, reps);
  p.s8s8 = rate(pool, detail::avx2::peak_s8s8, seconds, reps);
  p.u8s8 = rate(pool, detail::avx2::peak_u8s8, seconds, reps);
  if (ops::simd_level() >= ops::SimdLevel::Avx2Vnni && ops::vnni_evex()) {
    p.f32 = rate(pool, detail::avx512vnni::peak_f32_fma, seconds, reps);
    p.s8s8_vnni = rate(pool, detail::avx512vnni::peak_s8s8, seconds, reps);
    p.u8s8_vnni = rate(pool, detail::avx512vnni::peak_u8s8, seconds, reps);
  } else if (ops::simd_level() >= ops::SimdLevel::Avx2Vnni) {
    p.s8s8_vnni = rate(pool, detail::avxvnni::peak_s8s8, seconds, reps);
    p.u8s8_vnni = rate(pool, detail::avxvnni::peak_u8s8, seconds, reps);
  }
  return p;
}

double compute_peak_for(const ComputePeak& peak, TensorType w) {
  switch (w) {
    case TensorType::F32:
    case TensorType::F16:
    case TensorType::BF16:
      return peak.f32;
    case TensorType::Q8_0:
      return peak.s8s8_vnni > 0 ? peak.s8s8_vnni : peak.s8s8;
    case TensorType::Q4_0:
    case TensorType::Q5_0:
    case TensorType::Q4_K:
    case TensorType::Q6_K:
      return peak.u8s8_vnni > 0 ? peak.u8s8_vnni : peak.u8s8;
    default:
      return 0;
  }
}

}  // namespace hearth::tools
