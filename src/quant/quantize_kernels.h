// Internal: per-format block quantizers behind quantize_row (quantize.cpp dispatches).
#pragma once

#include <cstdint>

#include "quant/blocks.h"

namespace hearth::detail {

// Each quantizes exactly one block from x (32 or 256 floats).
BlockQ8_0 quantize_block_q8_0(const float* x);
BlockQ4_0 quantize_block_q4_0(const float* x);
BlockQ4_1 quantize_block_q4_1(const float* x);
BlockQ5_0 quantize_block_q5_0(const float* x);
BlockQ5_1 quantize_block_q5_1(const float* x);
BlockQ4_K quantize_block_q4_k(const float* x);
BlockQ5_K quantize_block_q5_k(const float* x);
BlockQ6_K quantize_block_q6_k(const float* x);
BlockQ8_K quantize_block_q8_k(const float* x);

// Shared helpers.

// Clamps to [lo, hi] (NaN -> lo, so a later int conversion is always defined).
inline float clampf(float v, float lo, float hi) {
  v = v >= lo ? v : lo;
  return v <= hi ? v : hi;
}

// Round half to even for |v| < 2^22 using float adds only (vectorizes, unlike lrintf).
inline float round_even(float v) {
  constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23
  return (v + kMagic) - kMagic;
}

// Nearest integer of v clamped to [lo, hi].
inline int quant_int(float v, int lo, int hi) {
  return static_cast<int>(round_even(clampf(v, static_cast<float>(lo), static_cast<float>(hi))));
}

// f16 bits of a scale, saturated to the largest finite f16 so it never becomes inf.
uint16_t scale_to_f16(float d);

// Same, but rounded away from zero: a scale that must cover the block's extreme value (or a
// super-scale its sub-block scales) without clipping, even where f16 is coarse (subnormal).
uint16_t scale_to_f16_up(float d);

}  // namespace hearth::detail
