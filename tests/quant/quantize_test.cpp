// Quantize -> dequantize round trips: error bounds per type, exact cases, idempotence, errors.
#include "quant/quantize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "quant/blocks.h"
#include "quant/dequantize.h"
#include "quant/half.h"
#include "quant/quant_test_util.h"
#include "util/error.h"

namespace hearth {
namespace {

using test::rel_rmse;

const TensorType kQuantizable[] = {TensorType::F32,  TensorType::F16,  TensorType::BF16,
                                   TensorType::Q8_0, TensorType::Q4_0, TensorType::Q4_1,
                                   TensorType::Q5_0, TensorType::Q5_1, TensorType::Q4_K,
                                   TensorType::Q5_K, TensorType::Q6_K, TensorType::Q8_K};

std::vector<float> round_trip(TensorType t, const std::vector<float>& x) {
  const auto n = static_cast<int64_t>(x.size());
  std::vector<uint8_t> packed(row_bytes(t, n));
  EXPECT_EQ(quantize_row(t, x.data(), packed.data(), n), packed.size());
  std::vector<float> y(x.size());
  dequantize_row(t, packed.data(), y.data(), n);
  return y;
}

// Largest relative RMSE (error RMS / data RMS, per row) a type may show on the random rows
// below, for light-tailed data and for heavy-tailed data (Laplace, 1% outliers at 12 sigma,
// whose outliers stretch a block's scale). The measured maxima (over all rows, sizes and seeds,
// with libstdc++'s distributions) are in the comments; bounds leave ~10% headroom. F16/BF16
// are bounded by their rounding (2^-11, 2^-8 relative per element).
struct Bounds {
  double light, heavy;
};

Bounds rmse_bounds(TensorType t) {
  switch (t) {
    case TensorType::F32:
      return {0.0, 0.0};
    case TensorType::F16:
      return {3.5e-4, 3.5e-4};  // 0.00025, 0.00025
    case TensorType::BF16:
      return {2.5e-3, 2.5e-3};  // 0.00186, 0.00189
    case TensorType::Q8_0:
      return {0.0075, 0.015};  // 0.0064, 0.0127
    case TensorType::Q8_K:
      return {0.012, 0.033};  // 0.0099, 0.0287
    case TensorType::Q6_K:
      return {0.021, 0.037};  // 0.0191, 0.0328
    case TensorType::Q5_0:
      return {0.052, 0.095};  // 0.0467, 0.0840
    case TensorType::Q5_1:
      return {0.045, 0.067};  // 0.0400, 0.0584
    case TensorType::Q5_K:
      return {0.044, 0.067};  // 0.0394, 0.0599
    case TensorType::Q4_0:
      return {0.105, 0.195};  // 0.0942, 0.1750
    case TensorType::Q4_1:
      return {0.093, 0.14};  // 0.0836, 0.1256
    case TensorType::Q4_K:
      return {0.083, 0.122};  // 0.0757, 0.1093
    default:
      return {0.0, 0.0};
  }
}

struct Distribution {
  const char* name;
  bool heavy_tailed;
  std::function<float(std::mt19937&)> draw;
};

std::function<float(std::mt19937&)> gaussian(float sigma) {
  return [sigma](std::mt19937& r) { return std::normal_distribution<float>(0, sigma)(r); };
}

std::vector<Distribution> distributions() {
  return {
      {"gaussian", false, gaussian(1)},
      {"gaussian_0.02", false, gaussian(0.02f)},  // typical weights
      {"gaussian_1e-3", false, gaussian(1e-3f)},  // f16 super-scales become subnormal
      {"gaussian_1e-4", false, gaussian(1e-4f)},
      {"uniform", false,
       [](std::mt19937& r) { return std::uniform_real_distribution<float>(-1, 1)(r); }},
      {"positive", false,
       [](std::mt19937& r) { return std::uniform_real_distribution<float>(0.5f, 2)(r); }},
      {"laplace", true,
       [](std::mt19937& r) {
         const float u = std::uniform_real_distribution<float>(-0.5f, 0.5f)(r);
         return (u < 0 ? 1.0f : -1.0f) * std::log(1 - 2 * std::fabs(u));
       }},
      {"outliers", true,
       [](std::mt19937& r) {
         const float g = std::normal_distribution<float>(0, 1)(r);
         return std::uniform_int_distribution<int>(0, 99)(r) == 0 ? 12 * g : g;
       }},
  };
}

class QuantizeType : public ::testing::TestWithParam<TensorType> {};

TEST_P(QuantizeType, RandomRowsErrorBelowBound) {
  const TensorType t = GetParam();
  const Bounds bounds = rmse_bounds(t);
  double worst[2] = {0, 0};
  for (const auto& dist : distributions()) {
    const double bound = dist.heavy_tailed ? bounds.heavy : bounds.light;
    for (int64_t n : {256, 512, 4096}) {
      for (uint32_t seed = 1; seed <= 4; ++seed) {
        std::mt19937 rng(seed * 7919 + static_cast<uint32_t>(n));
        std::vector<float> x(static_cast<size_t>(n));
        for (float& v : x) v = dist.draw(rng);
        const double e = rel_rmse(x, round_trip(t, x));
        worst[dist.heavy_tailed] = std::max(worst[dist.heavy_tailed], e);
        EXPECT_LE(e, bound) << type_name(t) << " " << dist.name << " n=" << n << " seed " << seed;
      }
    }
  }
  std::printf("[ measured ] %-5s worst relative RMSE light %.5f (bound %.4g), heavy %.5f (%.4g)\n",
              std::string(type_name(t)).c_str(), worst[0], bounds.light, worst[1], bounds.heavy);
}

TEST_P(QuantizeType, ZeroRowIsExactPositiveZero) {
  const TensorType t = GetParam();
  const std::vector<float> x(512, 0.0f);
  for (float v : round_trip(t, x)) {
    ASSERT_EQ(v, 0.0f) << type_name(t);
    ASSERT_FALSE(std::signbit(v)) << type_name(t) << " produced -0.0";
  }
}

TEST_P(QuantizeType, ConstantRowsAreNearlyExact) {
  const TensorType t = GetParam();
  for (float c : {1.0f, -2.5f, 0.37f, 0.02f, 0.001f, -1e-4f, -1234.5f}) {
    const std::vector<float> x(512, c);
    const auto y = round_trip(t, x);
    for (size_t i = 0; i < y.size(); ++i)  // f16 scale rounding is the only source of error
      ASSERT_NEAR(y[i], c, 4e-3 * std::fabs(c)) << type_name(t) << " c=" << c << " i=" << i;
  }
}

TEST_P(QuantizeType, DeterministicAndAlignmentFree) {
  const TensorType t = GetParam();
  std::mt19937 rng(5);
  std::vector<float> x(1024 + 1);
  for (float& v : x) v = std::normal_distribution<float>(0, 1)(rng);
  const size_t nb = row_bytes(t, 1024);
  std::vector<uint8_t> a(nb), b(nb + 1);
  quantize_row(t, x.data(), a.data(), 1024);
  // Unaligned source floats (copied) and unaligned destination bytes.
  std::vector<float> xs(x.begin(), x.begin() + 1024);
  ASSERT_EQ(quantize_row(t, xs.data(), b.data() + 1, 1024), nb);
  ASSERT_EQ(std::memcmp(a.data(), b.data() + 1, nb), 0) << type_name(t);
  std::vector<float> ya(1024), yb(1024);
  dequantize_row(t, a.data(), ya.data(), 1024);
  dequantize_row(t, b.data() + 1, yb.data(), 1024);
  ASSERT_EQ(std::memcmp(ya.data(), yb.data(), 4096), 0) << type_name(t);
}

TEST_P(QuantizeType, DotRowMatchesDequantizedDot) {
  const TensorType t = GetParam();
  std::mt19937 rng(11);
  std::vector<float> w(4096), x(4096);
  for (float& v : w) v = std::normal_distribution<float>(0, 1)(rng);
  for (float& v : x) v = std::normal_distribution<float>(0, 1)(rng);
  std::vector<uint8_t> packed(row_bytes(t, 4096));
  quantize_row(t, w.data(), packed.data(), 4096);
  std::vector<float> y(4096);
  dequantize_row(t, packed.data(), y.data(), 4096);
  double ref = 0, mag = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    ref += static_cast<double>(y[i]) * x[i];
    mag += std::fabs(static_cast<double>(y[i]) * x[i]);
  }
  EXPECT_NEAR(dot_row(t, packed.data(), x.data(), 4096), ref, 1e-5 * mag) << type_name(t);
}

INSTANTIATE_TEST_SUITE_P(AllQuantizable, QuantizeType, ::testing::ValuesIn(kQuantizable),
                         [](const auto& info) { return std::string(type_name(info.param)); });

TEST(Quantize, CanQuantizeExactlyTheListedTypes) {
  for (TensorType t : kQuantizable) {
    EXPECT_TRUE(can_quantize(t)) << type_name(t);
    EXPECT_TRUE(can_dequantize(t)) << type_name(t);
  }
  for (TensorType t :
       {TensorType::Q2_K, TensorType::Q3_K, TensorType::Q8_1, TensorType::IQ2_XXS,
        TensorType::IQ4_NL, TensorType::I8, TensorType::I32, TensorType::F64, TensorType::TQ1_0}) {
    EXPECT_FALSE(can_quantize(t)) << type_name(t);
    EXPECT_FALSE(can_dequantize(t)) << type_name(t);
  }
}

TEST(Quantize, F16AndBf16AreExactForRepresentableValues) {
  std::mt19937 rng(3);
  std::vector<float> x;
  std::vector<uint16_t> want;
  for (int i = 0; i < 4096; ++i) {
    uint16_t h = static_cast<uint16_t>(rng());
    if ((h & 0x7c00) == 0x7c00) h &= 0xbfff;  // no inf/NaN
    want.push_back(h);
    x.push_back(f16_to_f32(h));
  }
  std::vector<uint16_t> packed(x.size());
  quantize_row(TensorType::F16, x.data(), packed.data(), 4096);
  EXPECT_EQ(packed, want);
  EXPECT_EQ(round_trip(TensorType::F16, x), x);

  for (int i = 0; i < 4096; ++i) {
    uint16_t h = static_cast<uint16_t>(rng());
    if ((h & 0x7f80) == 0x7f80) h &= 0xbfff;
    want[static_cast<size_t>(i)] = h;
    x[static_cast<size_t>(i)] = bf16_to_f32(h);
  }
  quantize_row(TensorType::BF16, x.data(), packed.data(), 4096);
  EXPECT_EQ(packed, want);
  EXPECT_EQ(round_trip(TensorType::BF16, x), x);

  std::vector<float> any(256);
  for (float& v : any) v = std::normal_distribution<float>(0, 1e3f)(rng);
  EXPECT_EQ(round_trip(TensorType::F32, any), any);
}

// Blocks as the quantizer would produce them (largest level present) survive
// dequantize -> quantize byte for byte.
template <typename Block>
void expect_requantize_reproduces(TensorType t, const std::function<Block(std::mt19937&)>& make) {
  std::mt19937 rng(21);
  for (int iter = 0; iter < 2000; ++iter) {
    const Block b = make(rng);
    float y[kQK];
    dequantize_row(t, &b, y, kQK);
    Block again;
    quantize_row(t, y, &again, kQK);
    ASSERT_EQ(std::memcmp(&b, &again, sizeof(Block)), 0) << type_name(t) << " iteration " << iter;
  }
}

uint16_t random_scale(std::mt19937& rng) {  // positive normal f16 in [2^-10, 2^4)
  return static_cast<uint16_t>(std::uniform_int_distribution<int>(0x1400, 0x4bff)(rng));
}

TEST(Quantize, Q8_0RequantizeReproducesBlock) {
  expect_requantize_reproduces<BlockQ8_0>(TensorType::Q8_0, [](std::mt19937& rng) {
    BlockQ8_0 b{};
    b.d = random_scale(rng);
    for (auto& q : b.qs)
      q = static_cast<int8_t>(std::uniform_int_distribution<int>(-127, 127)(rng));
    b.qs[rng() % kQK] = (rng() & 1) ? 127 : -127;
    return b;
  });
}

TEST(Quantize, Q4_0RequantizeReproducesBlock) {
  expect_requantize_reproduces<BlockQ4_0>(TensorType::Q4_0, [](std::mt19937& rng) {
    BlockQ4_0 b{};
    b.d = random_scale(rng);
    int q[kQK];
    for (int& v : q) v = std::uniform_int_distribution<int>(0, 15)(rng);
    q[rng() % kQK] = 0;  // the -8 level carries the largest magnitude
    for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(q[j] | (q[j + 16] << 4));
    return b;
  });
}

TEST(Quantize, Q5_0RequantizeReproducesBlock) {
  expect_requantize_reproduces<BlockQ5_0>(TensorType::Q5_0, [](std::mt19937& rng) {
    BlockQ5_0 b{};
    b.d = random_scale(rng);
    int q[kQK];
    for (int& v : q) v = std::uniform_int_distribution<int>(0, 31)(rng);
    q[rng() % kQK] = 0;
    uint32_t qh = 0;
    for (int j = 0; j < 16; ++j)
      b.qs[j] = static_cast<uint8_t>((q[j] & 15) | ((q[j + 16] & 15) << 4));
    for (int j = 0; j < 32; ++j) qh |= static_cast<uint32_t>(q[j] >> 4) << j;
    std::memcpy(b.qh, &qh, 4);  // little-endian host assumed, as everywhere in GGUF
    return b;
  });
}

TEST(Quantize, Q8_KBlockSumsAndRange) {
  std::mt19937 rng(8);
  std::vector<float> x(512);
  for (float& v : x) v = std::normal_distribution<float>(0, 3)(rng);
  std::vector<BlockQ8_K> b(2);
  quantize_row(TensorType::Q8_K, x.data(), b.data(), 512);
  for (const auto& blk : b) {
    int amax = 0;
    for (int g = 0; g < 16; ++g) {
      int s = 0;
      for (int i = 0; i < 16; ++i) s += blk.qs[16 * g + i];
      EXPECT_EQ(blk.bsums[g], s) << "group " << g;
    }
    for (int8_t q : blk.qs) amax = std::max(amax, std::abs(static_cast<int>(q)));
    EXPECT_EQ(amax, 127);
  }
}

TEST(Quantize, KQuantsUseTheFullScaleRange) {
  // The sub-block with the largest scale should quantize to 6-bit scale 63 (or nearly), and the
  // levels should reach the top: a regression in scale packing shows up as wasted range.
  std::mt19937 rng(4);
  std::vector<float> x(256);
  for (float& v : x) v = std::normal_distribution<float>(0, 1)(rng);
  BlockQ4_K b{};
  quantize_row(TensorType::Q4_K, x.data(), &b, 256);
  int max_sc = 0, max_q = 0;
  for (int j = 0; j < 8; ++j) {
    uint8_t sc = 0, m = 0;
    kquant_scale_min(j, b.scales, sc, m);
    max_sc = std::max<int>(max_sc, sc);
  }
  for (uint8_t q : b.qs) max_q = std::max({max_q, q & 15, q >> 4});
  EXPECT_GE(max_sc, 62);
  EXPECT_EQ(max_q, 15);
}

TEST(Quantize, BadSizesAndTypesThrow) {
  std::vector<float> x(4096, 1.0f);
  std::vector<uint8_t> buf(8192);
  EXPECT_THROW(quantize_row(TensorType::Q4_K, x.data(), buf.data(), 100), Error);
  EXPECT_THROW(quantize_row(TensorType::Q4_0, x.data(), buf.data(), 33), Error);
  EXPECT_THROW(quantize_row(TensorType::Q8_0, x.data(), buf.data(), -32), Error);
  EXPECT_THROW(quantize_row(TensorType::Q2_K, x.data(), buf.data(), 256), Error);
  EXPECT_THROW(quantize_row(TensorType::I32, x.data(), buf.data(), 4), Error);
  EXPECT_THROW(dequantize_row(TensorType::Q6_K, buf.data(), x.data(), 255), Error);
  EXPECT_THROW(dequantize_row(TensorType::Q5_1, buf.data(), x.data(), 48), Error);
  EXPECT_THROW(dequantize_row(TensorType::IQ2_XXS, buf.data(), x.data(), 256), Error);
  EXPECT_THROW(dot_row(TensorType::Q4_K, buf.data(), x.data(), 128), Error);
  EXPECT_THROW(dot_row(TensorType::Q3_K, buf.data(), x.data(), 256), Error);
  try {
    quantize_row(TensorType::Q4_K, x.data(), buf.data(), 100);
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("Q4_K"), std::string::npos) << msg;
    EXPECT_NE(msg.find("256"), std::string::npos) << msg;
  }
  EXPECT_EQ(quantize_row(TensorType::Q4_K, x.data(), buf.data(), 0), 0u);
  dequantize_row(TensorType::Q4_K, buf.data(), x.data(), 0);
  EXPECT_EQ(dot_row(TensorType::Q4_K, buf.data(), x.data(), 0), 0.0f);
}

// Not run by default (timing): --gtest_also_run_disabled_tests --gtest_filter='*Throughput*'.
TEST(Quantize, DISABLED_Throughput) {
  constexpr int64_t n = 1 << 24;
  std::vector<float> x(static_cast<size_t>(n));
  std::mt19937 rng(1);
  for (float& v : x) v = std::normal_distribution<float>(0, 0.02f)(rng);
  for (TensorType t : kQuantizable) {
    std::vector<uint8_t> buf(row_bytes(t, n));
    std::vector<float> y(static_cast<size_t>(n));
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t r = 0; r < n; r += 4096)
      quantize_row(t, x.data() + r, buf.data() + row_bytes(t, r), 4096);
    const auto t1 = std::chrono::steady_clock::now();
    dequantize_row(t, buf.data(), y.data(), n);
    const auto t2 = std::chrono::steady_clock::now();
    const double q = std::chrono::duration<double>(t1 - t0).count();
    const double d = std::chrono::duration<double>(t2 - t1).count();
    std::printf("%-5s quantize %8.1f Melem/s   dequantize %8.1f Melem/s\n",
                std::string(type_name(t)).c_str(), n / q / 1e6, n / d / 1e6);
  }
}

}  // namespace
}  // namespace hearth
