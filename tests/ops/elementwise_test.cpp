// Fast elementwise kernels against the scalar references (ops/reference.h), on odd sizes, at
// every SIMD level the CPU supports.
//
// Tolerances: add_inplace and rope perform the reference's float operations in the same order
// and must be bit-exact. rmsnorm likewise, except that its double sum of squares is added in a
// different (fixed) order, which could move the float scale by 1 ulp in rare cases: <= 1 ulp
// (bit-exact on these inputs). silu_mul uses a vector exp of <= 2 ulp: <= 4 ulp of
// ref::silu(g) * u (measured 2; values below 1e-30 compared absolutely). exp_inplace: <= 2 ulp
// of the correctly rounded e^x (measured 1, same as std::exp on float).
#include "ops/elementwise.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernel_test_util.h"
#include "ops/cpu_features.h"
#include "ops/reference.h"
#include "quant/half.h"

namespace hearth::ops {
namespace {

using test::random_vec;
using test::ulp_diff;

// Runs `body` once per SIMD level available (scalar always, AVX2 where supported), restoring
// the level afterwards.
template <typename F>
void for_each_level(F body) {
  test::LevelGuard g;
  for (SimdLevel l : test::levels_available({SimdLevel::Scalar, SimdLevel::Avx2})) {
    set_simd_level(l);
    SCOPED_TRACE(simd_level_name(l));
    body();
  }
}

const int64_t kSizes[] = {1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100, 257, 1000, 4099};

TEST(Elementwise, RmsNormMatchesReference) {
  for_each_level([] {
    for (int64_t n : kSizes) {
      for (int64_t n_tok : {1, 3}) {
        auto x = random_vec(static_cast<size_t>(n * n_tok), 10 + static_cast<uint32_t>(n), 3.0f);
        auto w = random_vec(static_cast<size_t>(n), 20);
        for (bool with_w : {true, false}) {
          std::vector<float> y(x.size()), want(x.size());
          rmsnorm(x.data(), with_w ? w.data() : nullptr, y.data(), n_tok, n, 1e-6f);
          for (int64_t t = 0; t < n_tok; ++t)
            ref::rmsnorm(x.data() + t * n, with_w ? w.data() : nullptr, want.data() + t * n, n,
                         1e-6f);
          for (size_t i = 0; i < y.size(); ++i)
            ASSERT_LE(ulp_diff(y[i], want[i]), 1) << "n=" << n << " i=" << i;
          // In place.
          std::vector<float> z = x;
          rmsnorm(z.data(), with_w ? w.data() : nullptr, z.data(), n_tok, n, 1e-6f);
          EXPECT_EQ(std::memcmp(z.data(), y.data(), y.size() * 4), 0);
        }
      }
    }
  });
}

TEST(Elementwise, RmsNormRowsIndependentOfBatch) {
  for_each_level([] {
    const int64_t n = 1027, n_tok = 5;
    auto x = random_vec(static_cast<size_t>(n * n_tok), 30);
    auto w = random_vec(static_cast<size_t>(n), 31);
    std::vector<float> all(x.size()), one(static_cast<size_t>(n));
    rmsnorm(x.data(), w.data(), all.data(), n_tok, n, 1e-5f);
    for (int64_t t = 0; t < n_tok; ++t) {
      rmsnorm(x.data() + t * n, w.data(), one.data(), 1, n, 1e-5f);
      EXPECT_EQ(std::memcmp(one.data(), all.data() + t * n, static_cast<size_t>(n) * 4), 0);
    }
  });
}

TEST(Elementwise, AddInplaceExact) {
  for_each_level([] {
    for (int64_t n : kSizes) {
      auto x = random_vec(static_cast<size_t>(n), 40), y = random_vec(static_cast<size_t>(n), 41);
      auto want = x;
      for (size_t i = 0; i < want.size(); ++i) want[i] += y[i];
      add_inplace(x.data(), y.data(), n);
      EXPECT_EQ(std::memcmp(x.data(), want.data(), x.size() * 4), 0) << n;
    }
  });
}

TEST(Elementwise, SiluMulMatchesReference) {
  for_each_level([] {
    for (int64_t n : kSizes) {
      auto g = random_vec(static_cast<size_t>(n), 50, 4.0f),
           u = random_vec(static_cast<size_t>(n), 51);
      // Extremes mixed in: large magnitudes on both sides of silu's knee.
      const float extremes[] = {0.0f,   -0.0f, 1e-30f, -1e-30f, 20.0f,   -20.0f, 80.0f,
                                -80.0f, 88.0f, -88.0f, 100.0f,  -100.0f, 1e4f,   -1e4f};
      for (size_t i = 0; i < g.size() && i < std::size(extremes); i += 2) g[i] = extremes[i];
      std::vector<float> want(g.size());
      for (size_t i = 0; i < g.size(); ++i) want[i] = ref::silu(g[i]) * u[i];
      silu_mul(g.data(), u.data(), n);
      for (size_t i = 0; i < g.size(); ++i) {
        if (std::fabs(want[i]) < 1e-30f) {
          EXPECT_NEAR(g[i], want[i], 1e-30f) << i;
        } else {
          ASSERT_LE(ulp_diff(g[i], want[i]), 4)
              << "n=" << n << " i=" << i << " " << g[i] << " vs " << want[i];
        }
      }
    }
  });
}

TEST(Elementwise, ExpWithinTwoUlp) {
  for_each_level([] {
    // A dense sweep of the finite, non-underflowing range.
    std::vector<float> x;
    for (float v = -87.0f; v <= 88.7f; v += 0.0137f) x.push_back(v);
    for (float v = -1.0f; v <= 1.0f; v += 1.0f / 1024) x.push_back(v);
    auto y = x;
    exp_inplace(y.data(), static_cast<int64_t>(y.size()));
    int64_t worst = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const float want = static_cast<float>(std::exp(static_cast<double>(x[i])));
      worst = std::max(worst, ulp_diff(y[i], want));
    }
    EXPECT_LE(worst, 2);
    float special[] = {0.0f,
                       -std::numeric_limits<float>::infinity(),
                       std::numeric_limits<float>::infinity(),
                       -200.0f,
                       200.0f,
                       89.0f,
                       -100.0f,
                       std::numeric_limits<float>::quiet_NaN()};
    exp_inplace(special, 8);
    EXPECT_EQ(special[0], 1.0f);
    EXPECT_EQ(special[1], 0.0f);
    EXPECT_TRUE(std::isinf(special[2]));
    EXPECT_EQ(special[3], 0.0f);
    EXPECT_TRUE(std::isinf(special[4]));
    EXPECT_TRUE(std::isinf(special[5]));
    EXPECT_NEAR(special[6], std::exp(-100.0), 1e-44);  // subnormal, not flushed
    EXPECT_TRUE(std::isnan(special[7]));
  });
}

// to_f16 equals quant/half.h's f32_to_f16 bit for bit: every f16 rounding boundary (exact
// halfway cases, both parities), subnormals, overflow to inf, infinities, NaNs with payloads,
// random values of every magnitude, at every length (tails).
TEST(Elementwise, ToF16MatchesScalarConversionBitForBit) {
  std::vector<float> x;
  for (uint32_t h = 0; h < 0x7c00u; ++h) {  // every finite f16 magnitude and its neighbours
    const float f = f16_to_f32(static_cast<uint16_t>(h));
    const float next = f16_to_f32(static_cast<uint16_t>(h + 1));
    const float mid = f + (next - f) / 2;  // the halfway point, exact in f32
    for (float v : {f, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f)}) {
      x.push_back(v);
      x.push_back(-v);
    }
  }
  std::mt19937 rng(5);
  for (int i = 0; i < 100000; ++i) {
    const uint32_t bits = rng();
    float f;
    std::memcpy(&f, &bits, 4);
    x.push_back(f);  // any bit pattern: NaNs with payloads, f32 subnormals, huge values
  }
  for (float v : {65504.0f, 65519.99f, 65520.0f, 1e10f, std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::denorm_min(), 5.96e-8f, 2.98e-8f})
    for (float s : {1.0f, -1.0f}) x.push_back(s * v);
  std::vector<uint16_t> want(x.size());
  for (size_t i = 0; i < x.size(); ++i) want[i] = f32_to_f16(x[i]);
  for_each_level([&] {
    for (int64_t n : kSizes) {
      std::vector<uint16_t> got(static_cast<size_t>(n) + 1, 0xABCD);
      to_f16(x.data() + 7, got.data(), n);
      ASSERT_EQ(std::memcmp(got.data(), want.data() + 7, static_cast<size_t>(n) * 2), 0) << n;
      EXPECT_EQ(got[static_cast<size_t>(n)], 0xABCD);
    }
    std::vector<uint16_t> got(x.size());
    to_f16(x.data(), got.data(), static_cast<int64_t>(x.size()));
    for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(got[i], want[i]) << "x=" << x[i] << " i=" << i;
  });
}

// Greedy decoding's argmax: the reference's index for random rows of every tail length, and
// for the cases its compare-and-branch decides by order: ties, -0 against +0, NaN anywhere (x[0]
// included), infinities, nothing beating x[0].
TEST(Elementwise, FirstMaxIndexMatchesReference) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<std::vector<float>> rows;
  for (int64_t n : kSizes) rows.push_back(random_vec(static_cast<size_t>(n), 40 + n));
  rows.push_back(random_vec(151936, 7));  // a Qwen vocabulary
  for (int64_t n : {2, 9, 40, 1001}) {
    const auto un = static_cast<size_t>(n);
    std::vector<float> tie(un, 1.0f), zeros(un, 0.0f), all_nan(un, nan), all_low(un, -inf);
    tie[0] = 0.5f;          // every later value ties at 1
    zeros[un / 2] = -0.0f;  // +0 and -0 are equal
    all_low[0] = nan;       // x[0] NaN counts as -inf: nothing beats it
    rows.insert(rows.end(), {tie, zeros, all_nan, all_low});
    std::vector<float> r = random_vec(un, 90 + n);
    r[0] = nan;  // NaN first: the best of the rest wins
    rows.push_back(r);
    r[un - 1] = inf;
    r[un / 2] = nan;
    rows.push_back(r);
    std::vector<float> neg = random_vec(un, 95 + n);
    for (float& v : neg) v = -std::fabs(v) - 1.0f;
    neg[0] = -0.5f;  // nothing beats x[0]
    rows.push_back(neg);
    neg[un - 1] = -0.5f;  // a tie with x[0] does not beat it
    rows.push_back(neg);
  }
  for_each_level([&] {
    for (const auto& x : rows) {
      const auto n = static_cast<int64_t>(x.size());
      ASSERT_EQ(first_max_index(x.data(), n), ref::first_max_index(x.data(), n)) << "n=" << n;
    }
  });
  std::vector<float> at_end(1000, 0.0f);
  at_end[999] = 1.0f;
  EXPECT_EQ(first_max_index(at_end.data(), 1000), 999);
  EXPECT_EQ(first_max_index(at_end.data(), 1), 0);
}

// log-softmax's denominator: e^(x - shift) summed over the values above -inf, within the exp's
// 2 ulp of a long double sum (relative), NaN and -inf contributing nothing, on every level.
TEST(Elementwise, SumExpMatchesLongDoubleSum) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for_each_level([&] {
    for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{8}, int64_t{9}, int64_t{100}, int64_t{4099},
                      int64_t{151936}}) {
      std::vector<float> x = random_vec(static_cast<size_t>(n), 60 + n);
      for (float& v : x) v *= 8.0f;  // logits spread over e^-16 .. e^16
      if (n > 2) {
        x[1] = nan;
        x[static_cast<size_t>(n) - 1] = -inf;
      }
      const float shift = 3.0f;
      long double want = 0;
      for (float v : x)
        if (v > -inf) want += std::exp(static_cast<long double>(v) - shift);
      const double got = sum_exp(x.data(), n, shift);
      EXPECT_NEAR(got, static_cast<double>(want), 3e-7 * static_cast<double>(want)) << "n=" << n;
    }
    std::vector<float> none = {-inf, nan, -inf};
    EXPECT_EQ(sum_exp(none.data(), 3, 0.0f), 0.0);
  });
}

TEST(Elementwise, RopeMatchesReference) {
  for_each_level([] {
    for (bool neox : {false, true}) {
      for (int64_t head_dim : {2, 8, 18, 64, 80, 128}) {
        for (int64_t n_rot : {head_dim, head_dim / 2}) {
          if (n_rot < 2 || n_rot % 2) continue;
          const int64_t n_heads = 3;
          auto x = random_vec(static_cast<size_t>(n_heads * head_dim), 60);
          std::vector<float> cs(static_cast<size_t>(n_rot / 2)), sn(cs.size());
          ref::RopeConfig rc;
          rc.n_rot = n_rot;
          ref::rope_cos_sin(rc, 77, cs.data(), sn.data());
          auto want = x;
          for (int64_t h = 0; h < n_heads; ++h)
            ref::rope_apply(want.data() + h * head_dim, n_rot, cs.data(), sn.data(), neox);
          rope(x.data(), n_heads, head_dim, n_rot, cs.data(), sn.data(), neox);
          for (size_t i = 0; i < x.size(); ++i)
            ASSERT_EQ(ulp_diff(x[i], want[i]), 0)
                << "neox=" << neox << " hd=" << head_dim << " rot=" << n_rot << " i=" << i;
        }
      }
    }
  });
}

}  // namespace
}  // namespace hearth::ops
