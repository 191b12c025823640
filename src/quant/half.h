// IEEE binary16 (f16) and bfloat16 (bf16) conversions, portable scalar code.
#pragma once

#include <array>
#include <bit>
#include <cstdint>

namespace hearth {

// Exact f16 -> f32 by bit manipulation (every f16 value is representable in f32).
constexpr uint32_t f16_bits_to_f32_bits(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return sign | 0x7f800000u | (mant << 13);  // inf / NaN (payload kept)
  if (exp != 0) return sign | ((exp + 112u) << 23) | (mant << 13);
  if (mant == 0) return sign;  // +-0
  // Subnormal: value = mant * 2^-24; shift the leading 1 up to the implicit-bit position.
  uint32_t e = 113;  // biased f32 exponent of 2^-14, decremented per shift
  while ((mant & 0x400u) == 0) {
    mant <<= 1;
    --e;
  }
  return sign | (e << 23) | ((mant & 0x3ffu) << 13);
}

namespace detail {
// All 65536 conversions, built at compile time so it is ready before any static initializer.
extern const std::array<uint32_t, 65536> kF16ToF32Bits;
}  // namespace detail

// Hot path: one table lookup.
inline float f16_to_f32(uint16_t h) {
  return std::bit_cast<float>(detail::kF16ToF32Bits[h]);
}

// Round-to-nearest-even; overflow -> inf, underflow -> subnormal / signed zero, NaN -> quiet NaN.
uint16_t f32_to_f16(float f);

// bf16 is the top half of an f32: widening is a shift.
inline float bf16_to_f32(uint16_t h) {
  return std::bit_cast<float>(static_cast<uint32_t>(h) << 16);
}

// Round-to-nearest-even; NaN stays NaN (quiet bit forced so the payload cannot round to inf).
uint16_t f32_to_bf16(float f);

// Bulk helpers for rows.
void f16_to_f32_row(const uint16_t* src, float* dst, int64_t n);
void f32_to_f16_row(const float* src, uint16_t* dst, int64_t n);

}  // namespace hearth
