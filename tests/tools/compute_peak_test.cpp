#include "tools/compute_peak.h"

#include <gtest/gtest.h>

#include <cmath>

#include "ops/cpu_features.h"
#include "tools/compute_peak_kernels.h"

namespace hearth::tools {
namespace {

// Rates depend on the machine and the build (sanitizers make the loops far slower), so only
// that a figure was measured is checked, never how large it is.
TEST(ComputePeak, EveryFigureIsMeasuredWhereThereIsAProbe) {
  ops::ThreadPool pool(2);
  const ComputePeak p = measure_compute_peak(pool, 0.002, 1);
  if (ops::simd_level() < ops::SimdLevel::Avx2) {
    EXPECT_EQ(p.f32, 0);  // no probe: unknown, not made up
    return;
  }
  for (double r : {p.f32, p.s8s8, p.u8s8}) {
    EXPECT_GT(r, 0);
    EXPECT_TRUE(std::isfinite(r));
  }
  if (ops::simd_level() < ops::SimdLevel::Avx2Vnni) {
    EXPECT_EQ(p.s8s8_vnni, 0);
    EXPECT_EQ(p.u8s8_vnni, 0);
    return;
  }
  for (double r : {p.s8s8_vnni, p.u8s8_vnni}) {
    EXPECT_GT(r, 0);
    EXPECT_TRUE(std::isfinite(r));
  }
}

TEST(ComputePeak, LoopsCountTheOperationsTheyDo) {
  if (ops::simd_level() < ops::SimdLevel::Avx2) GTEST_SKIP() << "no AVX2 probe on this CPU";
  // 10 FMA chains x 8 lanes; 6 tokens x 32 MACs; 6 tokens x 64 MACs; 2 operations per MAC.
  EXPECT_EQ(detail::avx2::peak_f32_fma(7), 7.0 * 10 * 8 * 2);
  EXPECT_EQ(detail::avx2::peak_s8s8(7), 7.0 * 6 * 32 * 2);
  EXPECT_EQ(detail::avx2::peak_u8s8(7), 7.0 * 6 * 64 * 2);
  // Each VNNI build only where the CPU has its encoding: Zen 4 has the EVEX one and not the VEX
  // one (AVX-VNNI), so the level alone does not say which loops can run.
  const ops::CpuFeatures& f = ops::cpu_features();
  if (f.avxvnni) {
    EXPECT_EQ(detail::avxvnni::peak_s8s8(7), 7.0 * 6 * 32 * 2);
    EXPECT_EQ(detail::avxvnni::peak_u8s8(7), 7.0 * 6 * 64 * 2);
  }
  if (f.avx512f && f.avx512bw && f.avx512vl && f.avx512vnni) {
    // 10 chains x 16 lanes; 8 tokens x 64 MACs; 8 tokens x 128 MACs.
    EXPECT_EQ(detail::avx512vnni::peak_f32_fma(7), 7.0 * 10 * 16 * 2);
    EXPECT_EQ(detail::avx512vnni::peak_s8s8(7), 7.0 * 8 * 64 * 2);
    EXPECT_EQ(detail::avx512vnni::peak_u8s8(7), 7.0 * 8 * 128 * 2);
  }
}

TEST(ComputePeak, EachWeightTypeIsMeasuredAgainstItsKernelStep) {
  const ComputePeak p{1, 2, 3};
  EXPECT_EQ(compute_peak_for(p, TensorType::F16), 1);
  EXPECT_EQ(compute_peak_for(p, TensorType::BF16), 1);
  EXPECT_EQ(compute_peak_for(p, TensorType::Q8_0), 2);
  EXPECT_EQ(compute_peak_for(p, TensorType::Q4_0), 3);
  EXPECT_EQ(compute_peak_for(p, TensorType::Q4_K), 3);
  EXPECT_EQ(compute_peak_for(p, TensorType::Q6_K), 3);
  EXPECT_EQ(compute_peak_for(p, TensorType::Q5_1), 0);  // no probe of its step
  // Where the VNNI steps were measured, the packed kernels run on them.
  const ComputePeak v{1, 2, 3, 4, 5};
  EXPECT_EQ(compute_peak_for(v, TensorType::Q8_0), 4);
  EXPECT_EQ(compute_peak_for(v, TensorType::Q4_0), 5);
  EXPECT_EQ(compute_peak_for(v, TensorType::Q4_K), 5);
  EXPECT_EQ(compute_peak_for(v, TensorType::Q6_K), 5);
  EXPECT_EQ(compute_peak_for(v, TensorType::F16), 1);
}

}  // namespace
}  // namespace hearth::tools
