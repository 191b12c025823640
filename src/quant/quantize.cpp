#include "quant/quantize.h"

#include <cmath>
#include <cstring>

#include "quant/dequantize.h"
#include "quant/half.h"
#include "quant/quantize_kernels.h"
#include "util/error.h"

namespace hearth {
namespace detail {

uint16_t scale_to_f16(float d) {
  constexpr float kMaxF16 = 65504.0f;
  if (d == 0) return 0;  // +0, never -0: zero blocks then dequantize to +0.0
  return f32_to_f16(clampf(d, -kMaxF16, kMaxF16));
}

uint16_t scale_to_f16_up(float d) {
  uint16_t h = scale_to_f16(d);
  // Next pattern up in magnitude (same sign); 0x7bff (the largest finite) stays.
  if (std::fabs(f16_to_f32(h)) < std::fabs(d) && (h & 0x7fff) < 0x7bff) ++h;
  return h;
}

}  // namespace detail

namespace {

// Quantizes n / kElems blocks, storing each with memcpy (dst may be unaligned).
template <typename Block, int kElems>
size_t quantize_blocks(Block (*fn)(const float*), const float* src, uint8_t* dst, int64_t n) {
  const int64_t nb = n / kElems;
  for (int64_t i = 0; i < nb; ++i) {
    const Block b = fn(src + i * kElems);
    std::memcpy(dst + i * static_cast<int64_t>(sizeof(Block)), &b, sizeof(Block));
  }
  return static_cast<size_t>(nb) * sizeof(Block);
}

template <uint16_t (*conv)(float)>
size_t quantize_halves(const float* src, uint8_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = conv(src[i]);
    std::memcpy(dst + 2 * i, &h, 2);
  }
  return static_cast<size_t>(n) * 2;
}

}  // namespace

// Every format this build can decode it can also encode (the reference quantizers cover them all).
bool can_quantize(TensorType t) { return can_dequantize(t); }

size_t quantize_row(TensorType t, const float* src, void* dst, int64_t n) {
  if (!can_quantize(t)) fail("quantize_row: type {} is not supported", type_name(t));
  const int64_t bs = traits(t).block_elems;
  if (n < 0 || n % bs != 0)
    fail("quantize_row: {} elements is not a multiple of the {} block size {}", n, type_name(t),
         bs);
  auto* out = static_cast<uint8_t*>(dst);
  using namespace detail;
  switch (t) {
    case TensorType::F32:
      std::memcpy(out, src, static_cast<size_t>(n) * 4);
      return static_cast<size_t>(n) * 4;
    case TensorType::F16:
      return quantize_halves<f32_to_f16>(src, out, n);
    case TensorType::BF16:
      return quantize_halves<f32_to_bf16>(src, out, n);
    case TensorType::Q8_0:
      return quantize_blocks<BlockQ8_0, kQK>(quantize_block_q8_0, src, out, n);
    case TensorType::Q4_0:
      return quantize_blocks<BlockQ4_0, kQK>(quantize_block_q4_0, src, out, n);
    case TensorType::Q4_1:
      return quantize_blocks<BlockQ4_1, kQK>(quantize_block_q4_1, src, out, n);
    case TensorType::Q5_0:
      return quantize_blocks<BlockQ5_0, kQK>(quantize_block_q5_0, src, out, n);
    case TensorType::Q5_1:
      return quantize_blocks<BlockQ5_1, kQK>(quantize_block_q5_1, src, out, n);
    case TensorType::Q4_K:
      return quantize_blocks<BlockQ4_K, kQKK>(quantize_block_q4_k, src, out, n);
    case TensorType::Q5_K:
      return quantize_blocks<BlockQ5_K, kQKK>(quantize_block_q5_k, src, out, n);
    case TensorType::Q6_K:
      return quantize_blocks<BlockQ6_K, kQKK>(quantize_block_q6_k, src, out, n);
    case TensorType::Q8_K:
      return quantize_blocks<BlockQ8_K, kQKK>(quantize_block_q8_k, src, out, n);
    default:
      fail("quantize_row: type {} is not supported", type_name(t));
  }
}

}  // namespace hearth
