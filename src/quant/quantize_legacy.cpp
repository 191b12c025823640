// Quantizers for the 32-element formats: one scale (and offset) per block, derived from the
// block's extreme values, as the classic GGML reference quantizers do.
#include <cmath>

#include "quant/half.h"
#include "quant/quantize_kernels.h"

namespace hearth::detail {
namespace {

// The value with the largest magnitude, sign kept (symmetric formats map it to -2^(bits-1),
// using the one extra negative level).
float signed_absmax(const float* x) {
  float amax = 0.0f, mx = 0.0f;
  for (int j = 0; j < kQK; ++j) {
    const float a = std::fabs(x[j]);
    if (a > amax) {
      amax = a;
      mx = x[j];
    }
  }
  return mx;
}

void min_max(const float* x, float& lo, float& hi) {
  lo = x[0];
  hi = x[0];
  for (int j = 1; j < kQK; ++j) {
    lo = x[j] < lo ? x[j] : lo;
    hi = x[j] > hi ? x[j] : hi;
  }
}

// Inverse of the f16-rounded scale (what the dequantizer will use), 0 for a zero scale.
float inverse(uint16_t dh) {
  const float d = f16_to_f32(dh);
  return d != 0.0f ? 1.0f / d : 0.0f;
}

// Symmetric 2^bits-level quantization: q in [0, 2^bits), x ~ d * (q - 2^(bits-1)).
template <int kBits>
uint16_t quantize_symmetric(const float* x, int* q) {
  constexpr int kHalf = 1 << (kBits - 1);
  const uint16_t dh = scale_to_f16_up(signed_absmax(x) / -static_cast<float>(kHalf));
  const float id = inverse(dh);
  for (int j = 0; j < kQK; ++j) q[j] = quant_int(x[j] * id, -kHalf, kHalf - 1) + kHalf;
  return dh;
}

// Affine 2^bits-level quantization: q in [0, 2^bits), x ~ d * q + m with m = min(x).
template <int kBits>
void quantize_affine(const float* x, int* q, uint16_t& dh, uint16_t& mh) {
  constexpr int kMax = (1 << kBits) - 1;
  float lo = 0.0f, hi = 0.0f;
  min_max(x, lo, hi);
  dh = scale_to_f16_up((hi - lo) / static_cast<float>(kMax));
  mh = scale_to_f16(lo);
  const float id = inverse(dh);
  const float m = f16_to_f32(mh);
  for (int j = 0; j < kQK; ++j) q[j] = quant_int((x[j] - m) * id, 0, kMax);
}

void pack_nibbles(const int* q, uint8_t* qs) {
  for (int j = 0; j < kQK / 2; ++j)
    qs[j] = static_cast<uint8_t>((q[j] & 0xF) | ((q[j + kQK / 2] & 0xF) << 4));
}

// Bit j of qh (little-endian uint32) = bit 4 of q[j].
void pack_high_bits(const int* q, uint8_t* qh) {
  uint32_t h = 0;
  for (int j = 0; j < kQK; ++j) h |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
  for (int k = 0; k < 4; ++k) qh[k] = static_cast<uint8_t>(h >> (8 * k));
}

}  // namespace

BlockQ8_0 quantize_block_q8_0(const float* x) {
  float amax = 0.0f;
  for (int j = 0; j < kQK; ++j) amax = std::fmax(amax, std::fabs(x[j]));
  BlockQ8_0 b{};
  b.d = scale_to_f16_up(amax / 127.0f);
  const float id = inverse(b.d);
  for (int j = 0; j < kQK; ++j) b.qs[j] = static_cast<int8_t>(quant_int(x[j] * id, -127, 127));
  return b;
}

BlockQ4_0 quantize_block_q4_0(const float* x) {
  int q[kQK];
  BlockQ4_0 b{};
  b.d = quantize_symmetric<4>(x, q);
  pack_nibbles(q, b.qs);
  return b;
}

BlockQ5_0 quantize_block_q5_0(const float* x) {
  int q[kQK];
  BlockQ5_0 b{};
  b.d = quantize_symmetric<5>(x, q);
  pack_nibbles(q, b.qs);
  pack_high_bits(q, b.qh);
  return b;
}

BlockQ4_1 quantize_block_q4_1(const float* x) {
  int q[kQK];
  BlockQ4_1 b{};
  quantize_affine<4>(x, q, b.d, b.m);
  pack_nibbles(q, b.qs);
  return b;
}

BlockQ5_1 quantize_block_q5_1(const float* x) {
  int q[kQK];
  BlockQ5_1 b{};
  quantize_affine<5>(x, q, b.d, b.m);
  pack_nibbles(q, b.qs);
  pack_high_bits(q, b.qh);
  return b;
}

}  // namespace hearth::detail
