// Packed quantization blocks, byte-for-byte as GGML/GGUF files store them (little-endian).
// Half-precision fields are raw f16 bit patterns (see quant/half.h).
//
// Element order inside a block (what the dequantizers produce):
//   Q4_0/Q4_1/Q5_x: element j < 16 is the low nibble of qs[j], element j + 16 its high nibble;
//                   Q5_x take bit j of qh (read as a little-endian uint32) as the 5th bit of
//                   element j.
//   Q4_K/Q5_K:      4 chunks of 64; chunk c uses qs[32c .. 32c+31]: low nibbles are elements
//                   64c .. 64c+31 (sub-block 2c), high nibbles 64c+32 .. 64c+63 (sub-block 2c+1).
//                   Q5_K: bit 2c of qh[l] is the 5th bit of element 64c+l, bit 2c+1 of 64c+32+l.
//                   scales[12] packs 8 six-bit scales and 8 six-bit mins (see kquant_scale_min).
//   Q6_K:           2 halves of 128; half h, l < 32: ql[64h+l] low/high nibble -> elements
//                   128h+l / 128h+l+64, ql[64h+32+l] low/high -> 128h+l+32 / 128h+l+96;
//                   qh[32h+l] bit pairs 0-1,2-3,4-5,6-7 -> elements +0, +32, +64, +96.
//                   scales[k] (int8) applies to elements 16k .. 16k+15.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hearth {

inline constexpr int kQK = 32;    // elements per legacy block
inline constexpr int kQKK = 256;  // elements per K-quant super-block

struct BlockQ4_0 {
  uint16_t d;  // f16 scale: x = d * (q - 8)
  uint8_t qs[kQK / 2];
};

struct BlockQ4_1 {
  uint16_t d;  // f16 scale
  uint16_t m;  // f16 offset: x = d * q + m
  uint8_t qs[kQK / 2];
};

struct BlockQ5_0 {
  uint16_t d;     // f16 scale: x = d * (q - 16)
  uint8_t qh[4];  // 5th bits
  uint8_t qs[kQK / 2];
};

struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;  // x = d * q + m
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};

struct BlockQ8_0 {
  uint16_t d;  // x = d * q
  int8_t qs[kQK];
};

struct BlockQ4_K {
  uint16_t d;     // f16 super-scale for the 6-bit sub-block scales
  uint16_t dmin;  // f16 super-scale for the 6-bit sub-block mins
  uint8_t scales[12];
  uint8_t qs[kQKK / 2];  // x = (d * sc) * q - (dmin * m)
};

struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[kQKK / 8];
  uint8_t qs[kQKK / 2];
};

struct BlockQ6_K {
  uint8_t ql[kQKK / 2];  // low 4 bits
  uint8_t qh[kQKK / 4];  // high 2 bits
  int8_t scales[kQKK / 16];
  uint16_t d;  // x = (d * scales[k]) * (q - 32)
};

// Activation blocks for K-quant dot products.
struct BlockQ8_K {
  float d;  // x = d * q
  int8_t qs[kQKK];
  int16_t bsums[kQKK / 16];  // sums of qs in groups of 16
};

static_assert(sizeof(BlockQ4_0) == 18, "Q4_0 block must be 18 bytes");
static_assert(sizeof(BlockQ4_1) == 20, "Q4_1 block must be 20 bytes");
static_assert(sizeof(BlockQ5_0) == 22, "Q5_0 block must be 22 bytes");
static_assert(sizeof(BlockQ5_1) == 24, "Q5_1 block must be 24 bytes");
static_assert(sizeof(BlockQ8_0) == 34, "Q8_0 block must be 34 bytes");
static_assert(sizeof(BlockQ4_K) == 144, "Q4_K block must be 144 bytes");
static_assert(sizeof(BlockQ5_K) == 176, "Q5_K block must be 176 bytes");
static_assert(sizeof(BlockQ6_K) == 210, "Q6_K block must be 210 bytes");
static_assert(sizeof(BlockQ8_K) == 292, "Q8_K block must be 292 bytes");
static_assert(offsetof(BlockQ5_0, qs) == 6 && offsetof(BlockQ5_1, qs) == 8);
static_assert(offsetof(BlockQ4_K, qs) == 16 && offsetof(BlockQ5_K, qs) == 48);
static_assert(offsetof(BlockQ6_K, d) == 208 && offsetof(BlockQ8_K, bsums) == 260);

// Q4_K/Q5_K: the 6-bit scale and min of sub-block j (0..7) from the packed scales[12]:
// bytes 0-3 hold scales 0-3 (low 6 bits), bytes 4-7 mins 0-3; scales/mins 4-7 keep their
// low nibbles in bytes 8-11 and their top 2 bits in the spare top bits of bytes 0-7.
inline void kquant_scale_min(int j, const uint8_t* q, uint8_t& sc, uint8_t& m) {
  if (j < 4) {
    sc = q[j] & 63;
    m = q[j + 4] & 63;
  } else {
    sc = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// Inverse of kquant_scale_min; sc and m must be < 64. Fills all 12 bytes.
inline void kquant_pack_scale_mins(const uint8_t* sc, const uint8_t* m, uint8_t* q) {
  for (int j = 0; j < 4; ++j) {
    q[j] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
    q[j + 4] = static_cast<uint8_t>(m[j] | ((m[j + 4] >> 4) << 6));
    q[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0xF) | ((m[j + 4] & 0xF) << 4));
  }
}

// Q6_K: the 256 levels 0..63 of a block in element order (value = d · scales[i/16] · (q − 32)):
// ql holds low nibbles for elements l and l+64 of each half, qh the 2-bit tops of four.
inline void q6_k_levels(const BlockQ6_K& b, uint8_t* q) {
  for (int h = 0; h < 2; ++h) {
    const uint8_t* ql = b.ql + 64 * h;
    const uint8_t* qh = b.qh + 32 * h;
    uint8_t* o = q + 128 * h;
    for (int l = 0; l < 32; ++l) {
      o[l] = static_cast<uint8_t>((ql[l] & 0xF) | ((qh[l] & 3) << 4));
      o[l + 32] = static_cast<uint8_t>((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4));
      o[l + 64] = static_cast<uint8_t>((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4));
      o[l + 96] = static_cast<uint8_t>((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4));
    }
  }
}

}  // namespace hearth
