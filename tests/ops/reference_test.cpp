// The reference kernels against direct double-precision formulas.
#include "ops/reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernel_test_util.h"
#include "quant/quantize.h"

namespace hearth {
namespace {

using test::random_vec;

TEST(RefOps, DotMatchesDoubleForOddSizes) {
  for (int64_t n : {0, 1, 7, 8, 9, 31, 64, 257}) {
    auto a = random_vec(static_cast<size_t>(n), 1), b = random_vec(static_cast<size_t>(n), 2);
    double want = 0.0;
    for (int64_t i = 0; i < n; ++i) want += static_cast<double>(a[i]) * b[i];
    EXPECT_NEAR(ref::dot(a.data(), b.data(), n), want, 1e-4 * (1 + std::sqrt(n))) << n;
  }
}

TEST(RefOps, RmsNormUnitRmsTimesWeight) {
  auto x = random_vec(96, 3, 5.0f), w = random_vec(96, 4);
  std::vector<float> y(96);
  ref::rmsnorm(x.data(), w.data(), y.data(), 96, 1e-6f);
  double ss = 0;
  for (float v : x) ss += double(v) * v;
  const double s = 1.0 / std::sqrt(ss / 96 + 1e-6);
  for (int i = 0; i < 96; ++i) EXPECT_NEAR(y[i], x[i] * s * w[i], 1e-5);
}

TEST(RefOps, SoftmaxSumsToOneAndIsShiftInvariant) {
  std::vector<float> a = {1000.0f, 1001.0f, 999.0f, -1e30f}, b = {0.0f, 1.0f, -1.0f, -1e30f};
  ref::softmax(a.data(), 4);
  ref::softmax(b.data(), 4);
  double sum = 0;
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(a[i], b[i], 1e-6);
    sum += a[i];
  }
  EXPECT_NEAR(sum, 1.0, 1e-6);
  EXPECT_EQ(a[3], 0.0f);
}

TEST(RefOps, MatmulF32MatchesNaive) {
  const int64_t rows = 5, cols = 37, T = 3;
  auto w = random_vec(rows * cols, 5), x = random_vec(T * cols, 6);
  MatrixView m{"w",  TensorType::F32,     reinterpret_cast<const uint8_t*>(w.data()), cols,
               rows, cols * sizeof(float)};
  std::vector<float> y(T * rows);
  ref::matmul(m, x.data(), T, y.data());
  for (int64_t t = 0; t < T; ++t)
    for (int64_t r = 0; r < rows; ++r) {
      double want = 0;
      for (int64_t c = 0; c < cols; ++c) want += double(w[r * cols + c]) * x[t * cols + c];
      EXPECT_NEAR(y[t * rows + r], want, 1e-4);
    }
}

TEST(RefOps, MatmulQuantizedUsesDequantizedRows) {
  const int64_t rows = 3, cols = 64;
  auto w = random_vec(rows * cols, 7), x = random_vec(cols, 8);
  std::vector<uint8_t> q(row_bytes(TensorType::Q8_0, cols) * rows);
  for (int64_t r = 0; r < rows; ++r)
    quantize_row(TensorType::Q8_0, &w[r * cols], q.data() + r * row_bytes(TensorType::Q8_0, cols),
                 cols);
  MatrixView m{"w", TensorType::Q8_0, q.data(), cols, rows, row_bytes(TensorType::Q8_0, cols)};
  std::vector<float> y(rows), deq(cols);
  ref::matmul(m, x.data(), 1, y.data());
  for (int64_t r = 0; r < rows; ++r) {
    ref::get_row(m, r, deq.data());
    EXPECT_FLOAT_EQ(y[r], ref::dot(deq.data(), x.data(), cols));
    EXPECT_NEAR(y[r], ref::dot(&w[r * cols], x.data(), cols), 0.25);  // ~4 sigma of Q8_0 rounding
  }
}

TEST(RefOps, RopeAnglesPlain) {
  ref::RopeConfig c;
  c.n_rot = 8;
  c.freq_base = 10000.0f;
  std::vector<float> cs(4), sn(4);
  ref::rope_cos_sin(c, 7, cs.data(), sn.data());
  for (int i = 0; i < 4; ++i) {
    const double theta = 7 * std::pow(10000.0, -2.0 * i / 8);
    EXPECT_NEAR(cs[i], std::cos(theta), 1e-6);
    EXPECT_NEAR(sn[i], std::sin(theta), 1e-6);
  }
}

TEST(RefOps, RopeLinearScalingAndFreqFactors) {
  ref::RopeConfig c;
  c.n_rot = 4;
  c.freq_base = 100.0f;
  c.freq_scale = 0.25f;
  const float ff[2] = {1.0f, 8.0f};
  c.freq_factors = ff;
  std::vector<float> cs(2), sn(2);
  ref::rope_cos_sin(c, 10, cs.data(), sn.data());
  EXPECT_NEAR(sn[0], std::sin(10 * 0.25), 1e-6);
  EXPECT_NEAR(sn[1], std::sin(10 * 0.25 * std::pow(100.0, -0.5) / 8.0), 1e-6);
}

TEST(RefOps, RopeYarnBlendsBetweenInterpolationAndExtrapolation) {
  ref::RopeConfig c;
  c.n_rot = 64;
  c.freq_base = 10000.0f;
  c.freq_scale = 0.25f;
  c.ext_factor = 1.0f;
  c.orig_ctx = 4096;
  std::vector<float> cs(32), sn(32);
  ref::rope_cos_sin(c, 100, cs.data(), sn.data());
  const double mscale = 1.0 + 0.1 * std::log(4.0);
  // Highest frequency: pure extrapolation; lowest: pure interpolation (scaled by mscale).
  EXPECT_NEAR(sn[0], std::sin(100.0) * mscale, 1e-5);
  const double th31 = 100.0 * std::pow(10000.0, -62.0 / 64);
  EXPECT_NEAR(sn[31], std::sin(0.25 * th31) * mscale, 1e-5);
  EXPECT_NEAR(cs[0] * cs[0] + sn[0] * sn[0], mscale * mscale, 1e-5);
}

TEST(RefOps, RopeLayouts) {
  const float cs[2] = {0.0f, 1.0f}, sn[2] = {1.0f, 0.0f};  // pair 0 rotates by 90°, pair 1 not
  float inter[4] = {1, 2, 3, 4}, neox[4] = {1, 2, 3, 4};
  ref::rope_apply(inter, 4, cs, sn, false);  // pairs (0,1), (2,3)
  ref::rope_apply(neox, 4, cs, sn, true);    // pairs (0,2), (1,3)
  EXPECT_FLOAT_EQ(inter[0], -2);
  EXPECT_FLOAT_EQ(inter[1], 1);
  EXPECT_FLOAT_EQ(inter[2], 3);
  EXPECT_FLOAT_EQ(inter[3], 4);
  EXPECT_FLOAT_EQ(neox[0], -3);
  EXPECT_FLOAT_EQ(neox[2], 1);
  EXPECT_FLOAT_EQ(neox[1], 2);
  EXPECT_FLOAT_EQ(neox[3], 4);
}

}  // namespace
}  // namespace hearth
