#include "quant/half.h"

namespace hearth {
namespace detail {
namespace {

constexpr std::array<uint32_t, 65536> build_f16_table() {
  std::array<uint32_t, 65536> t{};
  for (uint32_t i = 0; i < 65536; ++i) t[i] = f16_bits_to_f32_bits(static_cast<uint16_t>(i));
  return t;
}

}  // namespace

// constinit: no dynamic initialization, so no static-init-order hazard for other TUs.
constinit const std::array<uint32_t, 65536> kF16ToF32Bits = build_f16_table();

}  // namespace detail

uint16_t f32_to_f16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t a = x & 0x7fffffffu;
  if (a > 0x7f800000u)  // NaN: keep the top payload bits, force quiet so it stays NaN
    return static_cast<uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 -> inf
  if (a >= 0x38800000u) {  // normal f16 range (>= 2^-14): rebias, round the 13 dropped bits
    uint32_t h = (a >> 13) - (112u << 10);
    const uint32_t rem = a & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // carry may reach the exponent: ok
    return static_cast<uint16_t>(sign | h);
  }
  const uint32_t e = a >> 23;
  if (e < 102) return sign;  // below 2^-25: rounds to zero (f32 subnormals included)
  // f16 subnormal: value / 2^-24 = m >> (126 - e), with m the 24-bit significand.
  const uint32_t m = (a & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126 - e;  // 14..24
  uint32_t h = m >> shift;
  const uint32_t rem = m & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (h & 1u))) ++h;  // may become 0x400 = smallest normal: ok
  return static_cast<uint16_t>(sign | h);
}

uint16_t f32_to_bf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  const uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

void f16_to_f32_row(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(src[i]);
}

void f32_to_f16_row(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = f32_to_f16(src[i]);
}

}  // namespace hearth
