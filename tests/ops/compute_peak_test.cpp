#include "ops/compute_peak.h"

#include <gtest/gtest.h>

#include "ops/cpu_features.h"

namespace hearth::ops {
namespace {

TEST(ComputePeak, EveryFigureIsMeasuredWhereThereIsAProbe) {
  ThreadPool pool(2);
  const ComputePeak p = measure_compute_peak(pool, 0.002, 1);
  if (simd_level() != SimdLevel::Avx2) {
    EXPECT_EQ(p.f32, 0);  // no probe: unknown, not made up
    return;
  }
  // Any machine that runs AVX2 does more than 1 GOPS of each (a broken loop would count 0 or
  // run forever).
  EXPECT_GT(p.f32, 1e9);
  EXPECT_GT(p.s8s8, 1e9);
  EXPECT_GT(p.u8s8, 1e9);
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
}

}  // namespace
}  // namespace hearth::ops
