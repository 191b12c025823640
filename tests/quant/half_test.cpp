#include "quant/half.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "quant/quant_test_util.h"

namespace hearth {
namespace {

using test::bits_of;
using test::float_of;

// Exact value of a finite f16 pattern in double, computed from its definition.
double f16_value(uint16_t h) {
  const int e = (h >> 10) & 0x1f;
  const int m = h & 0x3ff;
  const double mag = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
  return (h & 0x8000) ? -mag : mag;
}

TEST(Half, F16TableMatchesBitConversion) {
  for (uint32_t h = 0; h < 65536; ++h)
    ASSERT_EQ(bits_of(f16_to_f32(static_cast<uint16_t>(h))),
              f16_bits_to_f32_bits(static_cast<uint16_t>(h)))
        << "h=0x" << std::hex << h;
}

TEST(Half, F16ToF32MatchesDefinition) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto hh = static_cast<uint16_t>(h);
    const float f = f16_to_f32(hh);
    if (((h >> 10) & 0x1f) == 0x1f) {
      if (h & 0x3ff)
        EXPECT_TRUE(std::isnan(f)) << std::hex << h;
      else
        EXPECT_EQ(f, (h & 0x8000) ? -INFINITY : INFINITY);
      continue;
    }
    ASSERT_EQ(static_cast<double>(f), f16_value(hh)) << "h=0x" << std::hex << h;
    ASSERT_EQ(std::signbit(f), (h & 0x8000) != 0);
  }
}

TEST(Half, F16ExhaustiveRoundTrip) {
  int nans = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto hh = static_cast<uint16_t>(h);
    const float f = f16_to_f32(hh);
    const uint16_t back = f32_to_f16(f);
    if (std::isnan(f)) {
      ++nans;
      ASSERT_TRUE(std::isnan(f16_to_f32(back))) << "NaN 0x" << std::hex << h << " lost";
      ASSERT_EQ(back & 0x8000, hh & 0x8000) << "NaN sign";
    } else {
      ASSERT_EQ(back, hh) << "h=0x" << std::hex << h;
    }
  }
  EXPECT_EQ(nans, 2 * 1023);
}

TEST(Half, F16KnownValues) {
  EXPECT_EQ(f16_to_f32(0x3c00), 1.0f);
  EXPECT_EQ(f16_to_f32(0xc000), -2.0f);
  EXPECT_EQ(f16_to_f32(0x3555), 0.333251953125f);
  EXPECT_EQ(f16_to_f32(0x7bff), 65504.0f);
  EXPECT_EQ(f16_to_f32(0x0400), std::ldexp(1.0f, -14));  // smallest normal
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(f16_to_f32(0x03ff), std::ldexp(1023.0f, -24));
  EXPECT_EQ(f16_to_f32(0x7c00), INFINITY);
  EXPECT_EQ(f16_to_f32(0xfc00), -INFINITY);
  EXPECT_TRUE(std::signbit(f16_to_f32(0x8000)));
  EXPECT_EQ(f32_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_f16(-2.0f), 0xc000);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(0.1f), 0x2e66);
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_f16(INFINITY), 0x7c00);
  EXPECT_EQ(f32_to_f16(-INFINITY), 0xfc00);
  EXPECT_EQ(f32_to_f16(1e10f), 0x7c00);
  EXPECT_EQ(f32_to_f16(-1e10f), 0xfc00);
  EXPECT_EQ(f32_to_f16(std::numeric_limits<float>::max()), 0x7c00);
  EXPECT_EQ(f32_to_f16(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(f32_to_f16(-std::numeric_limits<float>::denorm_min()), 0x8000);
}

TEST(Half, F32ToF16RoundsTiesToEven) {
  // 1 + 2^-11 lies halfway between 1 and 1 + 2^-10: to even (1).
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  // 1 + 3*2^-11 lies halfway between 0x3c01 and 0x3c02: to even (0x3c02).
  EXPECT_EQ(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  // Just above the tie rounds up, just below rounds down.
  EXPECT_EQ(f32_to_f16(std::nextafter(1.0f + std::ldexp(1.0f, -11), 2.0f)), 0x3c01);
  EXPECT_EQ(f32_to_f16(std::nextafter(1.0f + 3 * std::ldexp(1.0f, -11), 0.0f)), 0x3c01);
  // Overflow boundary: 65519.99 -> 65504, 65520 (the tie with 2^16) -> inf.
  EXPECT_EQ(f32_to_f16(std::nextafter(65520.0f, 0.0f)), 0x7bff);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);
  // Subnormals: 2^-25 is the tie between 0 and 2^-24 -> 0; 3*2^-25 -> 2*2^-24 (even).
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(f32_to_f16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(f32_to_f16(3 * std::ldexp(1.0f, -25)), 0x0002);
  EXPECT_EQ(f32_to_f16(5 * std::ldexp(1.0f, -25)), 0x0002);
  // Largest subnormal + half an ulp carries into the smallest normal.
  EXPECT_EQ(f32_to_f16(std::ldexp(1023.5f, -24)), 0x0400);
  EXPECT_EQ(f32_to_f16(-std::ldexp(1.5f, -24)), 0x8002);
}

TEST(Half, F32ToF16NanStaysNan) {
  for (uint32_t payload : {1u, 0x1fffu, 0x2000u, 0x400000u, 0x7fffffu}) {
    for (uint32_t sign : {0u, 0x80000000u}) {
      const uint16_t h = f32_to_f16(float_of(sign | 0x7f800000u | payload));
      EXPECT_EQ(h & 0x7c00, 0x7c00);
      EXPECT_NE(h & 0x3ff, 0) << "payload 0x" << std::hex << payload << " became inf";
      EXPECT_EQ((h & 0x8000) != 0, sign != 0);
    }
  }
}

// Every result must be the nearest f16 (ties to the even pattern), checked against the
// neighbouring patterns in exact double arithmetic, over a dense sample of f32 bit patterns.
TEST(Half, F32ToF16IsNearestOverSampledFloats) {
  std::mt19937 rng(1234);
  auto check = [](uint32_t bits) {
    const float f = float_of(bits);
    if (std::isnan(f)) return;
    const uint16_t h = f32_to_f16(f);
    const double x = std::fabs(static_cast<double>(f));
    const uint16_t mag = h & 0x7fff;
    ASSERT_EQ((h & 0x8000) != 0, std::signbit(f)) << f;
    if (mag == 0x7c00) {  // inf only at or above 65520
      ASSERT_GE(x, 65520.0) << f;
      return;
    }
    const double v = f16_value(mag);
    const double below = mag > 0 ? f16_value(static_cast<uint16_t>(mag - 1)) : -1.0;
    const double above = mag < 0x7bff ? f16_value(static_cast<uint16_t>(mag + 1)) : 65536.0;
    const double err = std::fabs(x - v);
    ASSERT_LE(err, std::fabs(x - above)) << "f=" << f;
    if (mag > 0) {
      ASSERT_LE(err, std::fabs(x - below)) << "f=" << f;
    }
    if (err == std::fabs(x - above) || (mag > 0 && err == std::fabs(x - below))) {
      ASSERT_EQ(mag & 1, 0) << "tie not to even, f=" << f;
    }
  };
  for (uint64_t b = 0; b < (1ull << 32); b += 4099) check(static_cast<uint32_t>(b));
  // Dense around the f16 range, where all the interesting cases are.
  std::uniform_int_distribution<uint32_t> near(0x32000000u, 0x47800000u);
  for (int i = 0; i < 1000000; ++i) check(near(rng) | (i & 1 ? 0x80000000u : 0));
}

#if defined(__FLT16_MAX__) && defined(__x86_64__)
// Independent check against the compiler's own _Float16 conversion (libgcc / hardware).
TEST(Half, F32ToF16MatchesCompilerFloat16) {
  std::mt19937 rng(99);
  std::uniform_int_distribution<uint32_t> any;
  for (int i = 0; i < 2000000; ++i) {
    const float f = float_of(i < 1000000 ? any(rng) : 0x30000000u + any(rng) % 0x18000000u);
    if (std::isnan(f)) continue;
    const _Float16 ref = static_cast<_Float16>(f);
    uint16_t rb;
    std::memcpy(&rb, &ref, 2);
    ASSERT_EQ(f32_to_f16(f), rb) << "f=" << f;
  }
}
#endif

TEST(Half, Bf16KnownValuesAndTies) {
  EXPECT_EQ(bf16_to_f32(0x3f80), 1.0f);
  EXPECT_EQ(bf16_to_f32(0xc040), -3.0f);
  EXPECT_EQ(bf16_to_f32(0x7f80), INFINITY);
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(f32_to_bf16(-3.0f), 0xc040);
  EXPECT_EQ(f32_to_bf16(float_of(0x3f808000u)), 0x3f80);              // tie, even stays
  EXPECT_EQ(f32_to_bf16(float_of(0x3f818000u)), 0x3f82);              // tie, odd rounds up
  EXPECT_EQ(f32_to_bf16(float_of(0x3f808001u)), 0x3f81);              // above tie
  EXPECT_EQ(f32_to_bf16(float_of(0x3f807fffu)), 0x3f80);              // below tie
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::max()), 0x7f80);  // rounds to inf
  EXPECT_EQ(f32_to_bf16(-INFINITY), 0xff80);
  EXPECT_EQ(f32_to_bf16(-0.0f), 0x8000);
  // A NaN whose payload is only in the dropped bits must not turn into inf.
  for (uint32_t nan : {0x7f800001u, 0xff800001u, 0x7fc00000u, 0x7f80ffffu}) {
    const uint16_t h = f32_to_bf16(float_of(nan));
    EXPECT_TRUE(std::isnan(bf16_to_f32(h))) << std::hex << nan;
    EXPECT_EQ(h & 0x8000, (nan >> 16) & 0x8000);
  }
}

TEST(Half, Bf16ExhaustiveRoundTrip) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = bf16_to_f32(static_cast<uint16_t>(h));
    ASSERT_EQ(bits_of(f), h << 16);
    if (std::isnan(f))
      ASSERT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(f))));
    else
      ASSERT_EQ(f32_to_bf16(f), h) << std::hex << h;
  }
}

TEST(Half, RowHelpers) {
  const float src[5] = {0.0f, 1.0f, -2.5f, 65504.0f, 1e-8f};
  uint16_t h[5];
  float back[5];
  f32_to_f16_row(src, h, 5);
  f16_to_f32_row(h, back, 5);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(h[i], f32_to_f16(src[i]));
    EXPECT_EQ(back[i], f16_to_f32(h[i]));
  }
}

}  // namespace
}  // namespace hearth
