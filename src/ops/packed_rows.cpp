#include "ops/packed_rows.h"

#include <cstring>

#include "quant/blocks.h"
#include "util/error.h"

namespace hearth::ops {
namespace {

// The 2-byte float formats, packed as they are stored (no levels to rearrange).
bool is_half(TensorType t) {
  return t == TensorType::F16 || t == TensorType::BF16;
}

}  // namespace

bool packable(TensorType t) {
  return t == TensorType::Q8_0 || t == TensorType::Q4_0 || t == TensorType::Q5_0 ||
         t == TensorType::Q4_K || t == TensorType::Q6_K || t == TensorType::F16 ||
         t == TensorType::BF16;
}

int64_t packed_block_cols(TensorType t) {
  if (is_half(t)) return 8;
  return t == TensorType::Q4_K || t == TensorType::Q6_K ? 256 : 32;
}

size_t packed_block_bytes(TensorType t) {
  switch (t) {
    case TensorType::Q4_0:
      return 8 * 2 + 8 * 16;
    case TensorType::Q5_0:
      return 8 * 2 + 8 * 16 + 8 * 4;
    case TensorType::Q4_K:
      return 8 * 2 * 2 + 8 * 8 + 4 * 8 * 2 + 8 * 128;
    case TensorType::Q6_K:
      return 8 * 2 + 8 * 16 + 16 * 96;
    case TensorType::F16:
    case TensorType::BF16:
      return 8 * 16;
    default:
      return 8 * 2 + 8 * 32;
  }
}

size_t packed_bytes(TensorType t, int64_t n_rows, int64_t n_cols) {
  return static_cast<size_t>((n_rows + 7) / 8) *
         static_cast<size_t>(n_cols / packed_block_cols(t)) * packed_block_bytes(t);
}

namespace {

// The 32 levels of one row's block (Q8_0 signed, Q4_0 as stored 0..15, Q5_0 0..31) and its
// scale bits.
void levels(TensorType t, const uint8_t* blk, uint8_t* q, uint16_t& d) {
  if (t == TensorType::Q8_0) {
    const auto& b = *reinterpret_cast<const BlockQ8_0*>(blk);
    d = b.d;
    std::memcpy(q, b.qs, 32);
  } else if (t == TensorType::Q5_0) {
    const auto& b = *reinterpret_cast<const BlockQ5_0*>(blk);
    d = b.d;
    uint32_t qh;
    std::memcpy(&qh, b.qh, 4);
    for (int i = 0; i < 16; ++i) {
      q[i] = static_cast<uint8_t>((b.qs[i] & 0x0F) | (((qh >> i) & 1) << 4));
      q[i + 16] = static_cast<uint8_t>((b.qs[i] >> 4) | (((qh >> (i + 16)) & 1) << 4));
    }
  } else {
    const auto& b = *reinterpret_cast<const BlockQ4_0*>(blk);
    d = b.d;
    for (int i = 0; i < 16; ++i) {
      q[i] = b.qs[i] & 0x0F;
      q[i + 16] = b.qs[i] >> 4;
    }
  }
}

// Levels 0..15 of 32 elements into the 4 steps of 8 rows x 4 bytes at `lanes` (row r's lane
// already chosen): low nibble element 8k + e, high nibble element 8k + 4 + e. Bits above the
// nibble are dropped (Q5_0's fifth bit goes to put_fifth_bits).
void put_nibble_steps(const uint8_t* q, uint8_t* lanes) {
  for (int k = 0; k < 4; ++k)
    for (int e = 0; e < 4; ++e)
      lanes[32 * k + e] = static_cast<uint8_t>((q[8 * k + e] & 0x0F) | (q[8 * k + 4 + e] << 4));
}

// Q5_0's fifth bits of 32 elements (levels 0..31) into row r's 4-byte lane: byte k holds step
// k's, bit e for element 8k + e and bit 4 + e for element 8k + 4 + e (the nibble steps' order).
void put_fifth_bits(const uint8_t* q, uint8_t* lane) {
  for (int k = 0; k < 4; ++k) {
    uint8_t bits = 0;
    for (int e = 0; e < 8; ++e) bits = static_cast<uint8_t>(bits | ((q[8 * k + e] >> 4) << e));
    lane[k] = bits;
  }
}

// One row's Q4_K super-block into lane r of a packed group block.
void pack_q4_k(const uint8_t* src, int r, uint8_t* out) {
  const auto& b = *reinterpret_cast<const BlockQ4_K*>(src);
  std::memcpy(out + 2 * r, &b.d, 2);
  std::memcpy(out + 16 + 2 * r, &b.dmin, 2);
  for (int j = 0; j < 8; ++j) {
    uint8_t sc = 0, mn = 0;
    kquant_scale_min(j, b.scales, sc, mn);
    out[32 + 8 * j + r] = sc;
    out[96 + 16 * (j / 2) + 2 * r + (j % 2)] = mn;
  }
  uint8_t q[256];
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l) {
      q[64 * c + l] = b.qs[32 * c + l] & 0x0F;
      q[64 * c + 32 + l] = b.qs[32 * c + l] >> 4;
    }
  for (int j = 0; j < 8; ++j) put_nibble_steps(q + 32 * j, out + 160 + 128 * j + 4 * r);
}

// One row's Q6_K super-block into lane r of a packed group block.
void pack_q6_k(const uint8_t* src, int r, uint8_t* out) {
  const auto& b = *reinterpret_cast<const BlockQ6_K*>(src);
  std::memcpy(out + 2 * r, &b.d, 2);
  for (int k = 0; k < 16; ++k)
    out[16 + 16 * (k / 2) + 2 * r + (k % 2)] = static_cast<uint8_t>(b.scales[k]);
  uint8_t q[256];
  q6_k_levels(b, q);
  for (int P = 0; P < 16; ++P) {
    const uint8_t* e16 = q + 16 * P;
    uint8_t* pair = out + 144 + 96 * P;
    for (int e = 0; e < 4; ++e) {
      pair[4 * r + e] = static_cast<uint8_t>((e16[e] >> 4) | ((e16[4 + e] >> 4) << 2) |
                                             ((e16[8 + e] >> 4) << 4) | ((e16[12 + e] >> 4) << 6));
      for (int st = 0; st < 2; ++st)
        pair[32 + 32 * st + 4 * r + e] =
            static_cast<uint8_t>((e16[8 * st + e] & 0xF) | ((e16[8 * st + 4 + e] & 0xF) << 4));
    }
  }
}

// F16 / BF16: each row's 16 bytes of chunk b side by side, as stored.
void pack_half_rows(const MatrixView& w, int64_t nb, int64_t n_groups, uint8_t* dst) {
  constexpr size_t kChunk = 8 * 16;
  for (int64_t g = 0; g < n_groups; ++g)
    for (int64_t b = 0; b < nb; ++b) {
      uint8_t* out = dst + static_cast<size_t>(g * nb + b) * kChunk;
      std::memset(out, 0, kChunk);
      for (int r = 0; r < 8 && 8 * g + r < w.n_rows; ++r)
        std::memcpy(out + 16 * r, w.row(8 * g + r) + 16 * b, 16);
    }
}

}  // namespace

void pack_rows(const MatrixView& w, uint8_t* dst) {
  if (!packable(w.type) || w.n_cols % packed_block_cols(w.type) != 0)
    fail("pack_rows: {} ({}) has no packed layout", w.name, type_name(w.type));
  static_assert(sizeof(BlockQ8_0) == 34 && sizeof(BlockQ4_0) == 18 && sizeof(BlockQ5_0) == 22 &&
                sizeof(BlockQ4_K) == 144 && sizeof(BlockQ6_K) == 210);
  const bool q4 = w.type == TensorType::Q4_0, q5 = w.type == TensorType::Q5_0;
  const size_t out_block = packed_block_bytes(w.type);
  const int64_t nb = w.n_cols / packed_block_cols(w.type), n_groups = (w.n_rows + 7) / 8;
  if (is_half(w.type)) return pack_half_rows(w, nb, n_groups, dst);
  if (w.type == TensorType::Q4_K || w.type == TensorType::Q6_K) {
    const bool q6 = w.type == TensorType::Q6_K;
    const size_t in_block = q6 ? sizeof(BlockQ6_K) : sizeof(BlockQ4_K);
    for (int64_t g = 0; g < n_groups; ++g)
      for (int64_t b = 0; b < nb; ++b) {
        uint8_t* out = dst + static_cast<size_t>(g * nb + b) * out_block;
        std::memset(out, 0, out_block);
        for (int r = 0; r < 8 && 8 * g + r < w.n_rows; ++r) {
          const uint8_t* src = w.row(8 * g + r) + static_cast<size_t>(b) * in_block;
          if (q6)
            pack_q6_k(src, r, out);
          else
            pack_q4_k(src, r, out);
        }
      }
    return;
  }
  const size_t in_block = q4 ? sizeof(BlockQ4_0) : (q5 ? sizeof(BlockQ5_0) : sizeof(BlockQ8_0));
  for (int64_t g = 0; g < n_groups; ++g) {
    for (int64_t b = 0; b < nb; ++b) {
      uint8_t* out = dst + static_cast<size_t>(g * nb + b) * out_block;
      std::memset(out, 0, out_block);
      for (int r = 0; r < 8 && 8 * g + r < w.n_rows; ++r) {
        uint8_t q[32];
        uint16_t d;
        levels(w.type, w.row(8 * g + r) + static_cast<size_t>(b) * in_block, q, d);
        std::memcpy(out + 2 * r, &d, 2);
        uint8_t* lanes = out + 16 + 4 * r;
        if (q4 || q5) {
          put_nibble_steps(q, lanes);
          if (q5) put_fifth_bits(q, out + 16 + 128 + 4 * r);
        } else {
          for (int k = 0; k < 8; ++k) std::memcpy(lanes + 32 * k, q + 4 * k, 4);
        }
      }
    }
  }
}

}  // namespace hearth::ops
