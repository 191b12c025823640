#include "quant/dequantize.h"

#include <algorithm>
#include <cstring>

#include "quant/blocks.h"
#include "quant/half.h"
#include "util/error.h"

// Bit-exactness with the goldens needs each product rounded separately: never fuse a*b+c.
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace hearth {
namespace {

// Blocks are copied out with memcpy so `src` needs no particular alignment.
template <typename Block>
Block load_block(const uint8_t* p, int64_t i) {
  Block b;
  std::memcpy(&b, p + i * static_cast<int64_t>(sizeof(Block)), sizeof(Block));
  return b;
}

void dq_q4_0(const BlockQ4_0& b, float* y) {
  const float d = f16_to_f32(b.d);
  for (int j = 0; j < kQK / 2; ++j) {
    y[j] = d * static_cast<float>((b.qs[j] & 0xF) - 8);
    y[j + kQK / 2] = d * static_cast<float>((b.qs[j] >> 4) - 8);
  }
}

void dq_q4_1(const BlockQ4_1& b, float* y) {
  const float d = f16_to_f32(b.d);
  const float m = f16_to_f32(b.m);
  for (int j = 0; j < kQK / 2; ++j) {
    y[j] = d * static_cast<float>(b.qs[j] & 0xF) + m;
    y[j + kQK / 2] = d * static_cast<float>(b.qs[j] >> 4) + m;
  }
}

uint32_t load_qh(const uint8_t* qh) {
  return static_cast<uint32_t>(qh[0]) | static_cast<uint32_t>(qh[1]) << 8 |
         static_cast<uint32_t>(qh[2]) << 16 | static_cast<uint32_t>(qh[3]) << 24;
}

void dq_q5_0(const BlockQ5_0& b, float* y) {
  const float d = f16_to_f32(b.d);
  const uint32_t qh = load_qh(b.qh);
  for (int j = 0; j < kQK / 2; ++j) {
    const int lo = (b.qs[j] & 0xF) | static_cast<int>(((qh >> j) & 1u) << 4);
    const int hi = (b.qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
    y[j] = d * static_cast<float>(lo - 16);
    y[j + kQK / 2] = d * static_cast<float>(hi - 16);
  }
}

void dq_q5_1(const BlockQ5_1& b, float* y) {
  const float d = f16_to_f32(b.d);
  const float m = f16_to_f32(b.m);
  const uint32_t qh = load_qh(b.qh);
  for (int j = 0; j < kQK / 2; ++j) {
    const int lo = (b.qs[j] & 0xF) | static_cast<int>(((qh >> j) & 1u) << 4);
    const int hi = (b.qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
    y[j] = d * static_cast<float>(lo) + m;
    y[j + kQK / 2] = d * static_cast<float>(hi) + m;
  }
}

void dq_q8_0(const BlockQ8_0& b, float* y) {
  const float d = f16_to_f32(b.d);
  for (int j = 0; j < kQK; ++j) y[j] = static_cast<float>(b.qs[j]) * d;
}

void dq_q4_k(const BlockQ4_K& b, float* y) {
  const float d = f16_to_f32(b.d);
  const float dmin = f16_to_f32(b.dmin);
  for (int c = 0; c < 4; ++c) {  // chunks of 64 = two sub-blocks sharing qs bytes
    const uint8_t* q = b.qs + 32 * c;
    uint8_t sc = 0, m = 0;
    kquant_scale_min(2 * c, b.scales, sc, m);
    const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(m);
    kquant_scale_min(2 * c + 1, b.scales, sc, m);
    const float d2 = d * static_cast<float>(sc), m2 = dmin * static_cast<float>(m);
    float* out = y + 64 * c;
    for (int l = 0; l < 32; ++l) out[l] = d1 * static_cast<float>(q[l] & 0xF) - m1;
    for (int l = 0; l < 32; ++l) out[32 + l] = d2 * static_cast<float>(q[l] >> 4) - m2;
  }
}

void dq_q5_k(const BlockQ5_K& b, float* y) {
  const float d = f16_to_f32(b.d);
  const float dmin = f16_to_f32(b.dmin);
  for (int c = 0; c < 4; ++c) {
    const uint8_t* q = b.qs + 32 * c;
    uint8_t sc = 0, m = 0;
    kquant_scale_min(2 * c, b.scales, sc, m);
    const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(m);
    kquant_scale_min(2 * c + 1, b.scales, sc, m);
    const float d2 = d * static_cast<float>(sc), m2 = dmin * static_cast<float>(m);
    const int u1 = 1 << (2 * c), u2 = 2 << (2 * c);
    float* out = y + 64 * c;
    for (int l = 0; l < 32; ++l)
      out[l] = d1 * static_cast<float>((q[l] & 0xF) + ((b.qh[l] & u1) ? 16 : 0)) - m1;
    for (int l = 0; l < 32; ++l)
      out[32 + l] = d2 * static_cast<float>((q[l] >> 4) + ((b.qh[l] & u2) ? 16 : 0)) - m2;
  }
}

void dq_q6_k(const BlockQ6_K& b, float* y) {
  const float d = f16_to_f32(b.d);
  uint8_t q[256];
  q6_k_levels(b, q);
  for (int e = 0; e < 256; ++e)
    y[e] = (d * static_cast<float>(b.scales[e / 16])) * static_cast<float>(q[e] - 32);
}

void dq_q8_k(const BlockQ8_K& b, float* y) {
  for (int j = 0; j < kQKK; ++j) y[j] = b.d * static_cast<float>(b.qs[j]);
}

// Decodes block i of a row of block type t into y (block_elems floats).
void decode_block(TensorType t, const uint8_t* p, int64_t i, float* y) {
  switch (t) {
    case TensorType::Q4_0:
      return dq_q4_0(load_block<BlockQ4_0>(p, i), y);
    case TensorType::Q4_1:
      return dq_q4_1(load_block<BlockQ4_1>(p, i), y);
    case TensorType::Q5_0:
      return dq_q5_0(load_block<BlockQ5_0>(p, i), y);
    case TensorType::Q5_1:
      return dq_q5_1(load_block<BlockQ5_1>(p, i), y);
    case TensorType::Q8_0:
      return dq_q8_0(load_block<BlockQ8_0>(p, i), y);
    case TensorType::Q4_K:
      return dq_q4_k(load_block<BlockQ4_K>(p, i), y);
    case TensorType::Q5_K:
      return dq_q5_k(load_block<BlockQ5_K>(p, i), y);
    case TensorType::Q6_K:
      return dq_q6_k(load_block<BlockQ6_K>(p, i), y);
    case TensorType::Q8_K:
      return dq_q8_k(load_block<BlockQ8_K>(p, i), y);
    default:
      fail("dequantize: type {} is not a block type", type_name(t));
  }
}

// Plain element types, decoded `count` elements starting at element `first`.
void decode_plain(TensorType t, const uint8_t* p, int64_t first, int64_t count, float* y) {
  switch (t) {
    case TensorType::F32:
      std::memcpy(y, p + first * 4, static_cast<size_t>(count) * 4);
      return;
    case TensorType::F16:
    case TensorType::BF16: {
      const bool half = t == TensorType::F16;
      for (int64_t j = 0; j < count; ++j) {
        uint16_t h;
        std::memcpy(&h, p + (first + j) * 2, 2);
        y[j] = half ? f16_to_f32(h) : bf16_to_f32(h);
      }
      return;
    }
    default:
      fail("dequantize: type {} is not a plain type", type_name(t));
  }
}

bool is_plain(TensorType t) {
  return t == TensorType::F32 || t == TensorType::F16 || t == TensorType::BF16;
}

// Validates (t, n) and returns the block size.
int64_t check_row(const char* what, TensorType t, int64_t n) {
  if (!can_dequantize(t)) fail("{}: type {} is not supported", what, type_name(t));
  const int64_t bs = traits(t).block_elems;
  if (n < 0 || n % bs != 0)
    fail("{}: {} elements is not a multiple of the {} block size {}", what, n, type_name(t), bs);
  return bs;
}

}  // namespace

bool can_dequantize(TensorType t) {
  switch (t) {
    case TensorType::F32:
    case TensorType::F16:
    case TensorType::BF16:
    case TensorType::Q4_0:
    case TensorType::Q4_1:
    case TensorType::Q5_0:
    case TensorType::Q5_1:
    case TensorType::Q8_0:
    case TensorType::Q4_K:
    case TensorType::Q5_K:
    case TensorType::Q6_K:
    case TensorType::Q8_K:
      return true;
    default:
      return false;
  }
}

void dequantize_row(TensorType t, const void* src, float* dst, int64_t n) {
  const int64_t bs = check_row("dequantize_row", t, n);
  const auto* p = static_cast<const uint8_t*>(src);
  if (is_plain(t)) return decode_plain(t, p, 0, n, dst);
  for (int64_t i = 0; i < n / bs; ++i) decode_block(t, p, i, dst + i * bs);
}

float dot_row(TensorType t, const void* row, const float* x, int64_t n) {
  const int64_t bs = check_row("dot_row", t, n);
  const auto* p = static_cast<const uint8_t*>(row);
  // Plain types go through the same buffer in chunks of 256 so the summation order is the
  // same simple left-to-right one for every type.
  constexpr int64_t kChunk = kQKK;
  float buf[kChunk];
  float sum = 0.0f;
  const int64_t step = is_plain(t) ? kChunk : bs;
  for (int64_t i0 = 0; i0 < n; i0 += step) {
    const int64_t count = std::min(step, n - i0);
    if (is_plain(t))
      decode_plain(t, p, i0, count, buf);
    else
      decode_block(t, p, i0 / bs, buf);
    for (int64_t j = 0; j < count; ++j) sum += buf[j] * x[i0 + j];
  }
  return sum;
}

}  // namespace hearth
