// Scalar reference of the matmul kernels: the same integer block dot products as the SIMD
// paths (exact), with the per-block float terms accumulated in block order. Also the fallback
// for CPUs without AVX2 and for weight types without a SIMD kernel.
#include <cstring>
#include <vector>

#include "ops/matmul_kernels.h"
#include "quant/blocks.h"
#include "quant/half.h"
#include "quant/quantize_kernels.h"
#include "util/error.h"

// A fixed evaluation order: never fuse a*b+c, whatever the target flags.
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace hearth::ops::mm {
namespace {

template <typename Block>
Block load_block(const uint8_t* p) {
  Block b;
  std::memcpy(&b, p, sizeof(Block));
  return b;
}

uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// One weight row decoded to integer levels and block scales.
struct RowLevels {
  std::vector<int8_t> q;        // n_cols levels
  std::vector<float> d, m;      // per block: scale and min/offset scale (dmin for K-quants)
  std::vector<int32_t> sc, mn;  // K-quants: per sub-block scale (and min)
};

void decode_legacy(TensorType t, const uint8_t* row, int64_t nb, RowLevels& L) {
  for (int64_t b = 0; b < nb; ++b) {
    int8_t* q = L.q.data() + 32 * b;
    switch (t) {
      case TensorType::Q8_0: {
        const auto blk = load_block<BlockQ8_0>(row + b * sizeof(BlockQ8_0));
        L.d[b] = f16_to_f32(blk.d);
        std::memcpy(q, blk.qs, 32);
        break;
      }
      case TensorType::Q4_0: {
        const auto blk = load_block<BlockQ4_0>(row + b * sizeof(BlockQ4_0));
        L.d[b] = f16_to_f32(blk.d);
        for (int j = 0; j < 16; ++j) {
          q[j] = static_cast<int8_t>((blk.qs[j] & 0xF) - 8);
          q[j + 16] = static_cast<int8_t>((blk.qs[j] >> 4) - 8);
        }
        break;
      }
      case TensorType::Q4_1: {
        const auto blk = load_block<BlockQ4_1>(row + b * sizeof(BlockQ4_1));
        L.d[b] = f16_to_f32(blk.d);
        L.m[b] = f16_to_f32(blk.m);
        for (int j = 0; j < 16; ++j) {
          q[j] = static_cast<int8_t>(blk.qs[j] & 0xF);
          q[j + 16] = static_cast<int8_t>(blk.qs[j] >> 4);
        }
        break;
      }
      case TensorType::Q5_0:
      case TensorType::Q5_1: {
        const bool q50 = t == TensorType::Q5_0;
        const uint8_t* p = row + b * (q50 ? sizeof(BlockQ5_0) : sizeof(BlockQ5_1));
        const uint8_t* qs = q50 ? p + offsetof(BlockQ5_0, qs) : p + offsetof(BlockQ5_1, qs);
        const uint32_t qh =
            load_u32(q50 ? p + offsetof(BlockQ5_0, qh) : p + offsetof(BlockQ5_1, qh));
        uint16_t dh, mh = 0;
        std::memcpy(&dh, p, 2);
        if (!q50) std::memcpy(&mh, p + 2, 2);
        L.d[b] = f16_to_f32(dh);
        L.m[b] = f16_to_f32(mh);
        const int off = q50 ? 16 : 0;
        for (int j = 0; j < 16; ++j) {
          const int lo = (qs[j] & 0xF) | static_cast<int>(((qh >> j) & 1u) << 4);
          const int hi = (qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
          q[j] = static_cast<int8_t>(lo - off);
          q[j + 16] = static_cast<int8_t>(hi - off);
        }
        break;
      }
      default:
        fail("matmul: {} is not a 32-element block type", type_name(t));
    }
  }
}

void decode_kquant(TensorType t, const uint8_t* row, int64_t nsb, RowLevels& L) {
  for (int64_t s = 0; s < nsb; ++s) {
    int8_t* q = L.q.data() + 256 * s;
    if (t == TensorType::Q6_K) {
      const auto blk = load_block<BlockQ6_K>(row + s * sizeof(BlockQ6_K));
      L.d[s] = f16_to_f32(blk.d);
      for (int k = 0; k < 16; ++k) L.sc[16 * s + k] = blk.scales[k];
      q6_k_levels(blk, reinterpret_cast<uint8_t*>(q));  // 0..63: the same bits as int8
      continue;
    }
    const bool q5 = t == TensorType::Q5_K;
    const uint8_t* p = row + s * (q5 ? sizeof(BlockQ5_K) : sizeof(BlockQ4_K));
    uint16_t dh, mh;
    std::memcpy(&dh, p, 2);
    std::memcpy(&mh, p + 2, 2);
    L.d[s] = f16_to_f32(dh);
    L.m[s] = f16_to_f32(mh);
    const uint8_t* scales = p + 4;
    const uint8_t* qh = q5 ? p + offsetof(BlockQ5_K, qh) : nullptr;
    const uint8_t* qs = p + (q5 ? offsetof(BlockQ5_K, qs) : offsetof(BlockQ4_K, qs));
    for (int j = 0; j < 8; ++j) {
      uint8_t sc = 0, mn = 0;
      kquant_scale_min(j, scales, sc, mn);
      L.sc[8 * s + j] = sc;
      L.mn[8 * s + j] = mn;
    }
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l) {
        int lo = qs[32 * c + l] & 0xF, hi = qs[32 * c + l] >> 4;
        if (q5) {
          lo |= ((qh[l] >> (2 * c)) & 1) << 4;
          hi |= ((qh[l] >> (2 * c + 1)) & 1) << 4;
        }
        q[64 * c + l] = static_cast<int8_t>(lo);
        q[64 * c + 32 + l] = static_cast<int8_t>(hi);
      }
    }
  }
}

int32_t idot(const int8_t* a, const int8_t* b, int n) {
  int32_t s = 0;
  for (int i = 0; i < n; ++i) s += static_cast<int32_t>(a[i]) * b[i];
  return s;
}

float dot_legacy(const RowLevels& L, bool has_min, const Acts& x, int64_t t, int64_t nb) {
  const int8_t* aq = x.qs(t);
  const float* ad = x.d(t);
  const int16_t* as = x.sums(t);
  float y = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    const int32_t isum = idot(L.q.data() + 32 * b, aq + 32 * b, 32);
    y += (L.d[b] * ad[b]) * static_cast<float>(isum);
    if (has_min) y += (L.m[b] * ad[b]) * static_cast<float>(as[b]);
  }
  return y;
}

float dot_kquant(TensorType t, const RowLevels& L, const Acts& x, int64_t tok, int64_t nsb) {
  const int8_t* aq = x.qs(tok);
  const float* ad = x.d(tok);
  const int16_t* bs = x.sums(tok);
  float y = 0.0f;
  for (int64_t s = 0; s < nsb; ++s) {
    const int8_t* q = L.q.data() + 256 * s;
    const int8_t* a = aq + 256 * s;
    const int16_t* bsum = bs + 16 * s;
    if (t == TensorType::Q6_K) {
      const int32_t* sc = L.sc.data() + 16 * s;
      int32_t isum = 0, corr = 0;
      for (int k = 0; k < 16; ++k) {
        isum += sc[k] * idot(q + 16 * k, a + 16 * k, 16);
        corr += sc[k] * bsum[k];
      }
      isum -= 32 * corr;
      y += (L.d[s] * ad[s]) * static_cast<float>(isum);
    } else {
      const int32_t* sc = L.sc.data() + 8 * s;
      const int32_t* mn = L.mn.data() + 8 * s;
      int32_t isum = 0, imin = 0;
      for (int j = 0; j < 8; ++j) {
        isum += sc[j] * idot(q + 32 * j, a + 32 * j, 32);
        imin += mn[j] * (bsum[2 * j] + bsum[2 * j + 1]);
      }
      y += (L.d[s] * ad[s]) * static_cast<float>(isum);
      y -= (L.m[s] * ad[s]) * static_cast<float>(imin);
    }
  }
  return y;
}

// The F32-family order: eight lane sums over whole 8-chunks, a fixed pairwise reduction, then
// the tail in element order.
float dot_f32(const float* w, const float* x, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) acc[j] += w[i + j] * x[i + j];
  float y = ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
  for (; i < n; ++i) y += w[i] * x[i];
  return y;
}

void decode_plain(TensorType t, const uint8_t* row, int64_t n, float* out) {
  if (t == TensorType::F32) {
    std::memcpy(out, row, static_cast<size_t>(n) * 4);
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, row + 2 * i, 2);
    out[i] = t == TensorType::F16 ? f16_to_f32(h) : bf16_to_f32(h);
  }
}

}  // namespace

void quantize_rows_scalar(TensorType act_type, const float* x, int64_t n_tok, int64_t n_cols,
                          uint8_t* out, const ActLayout& lay) {
  for (int64_t t = 0; t < n_tok; ++t) {
    const float* src = x + t * n_cols;
    uint8_t* row = out + static_cast<size_t>(t) * lay.stride;
    auto* qs = reinterpret_cast<int8_t*>(row);
    auto* d = reinterpret_cast<float*>(row + lay.d_off);
    auto* sums = reinterpret_cast<int16_t*>(row + lay.sum_off);
    switch (act_type) {
      case TensorType::F32:
        std::memcpy(row, src, static_cast<size_t>(n_cols) * 4);
        break;
      case TensorType::Q8_0:
        for (int64_t b = 0; b < n_cols / 32; ++b) {
          const BlockQ8_0 blk = detail::quantize_block_q8_0(src + 32 * b);
          d[b] = f16_to_f32(blk.d);
          int s = 0;
          for (int j = 0; j < 32; ++j) s += blk.qs[j];
          sums[b] = static_cast<int16_t>(s);
          std::memcpy(qs + 32 * b, blk.qs, 32);
        }
        break;
      case TensorType::Q8_K:
        for (int64_t b = 0; b < n_cols / 256; ++b) {
          const BlockQ8_K blk = detail::quantize_block_q8_k(src + 256 * b);
          d[b] = blk.d;
          std::memcpy(sums + 16 * b, blk.bsums, sizeof(blk.bsums));
          std::memcpy(qs + 256 * b, blk.qs, 256);
        }
        break;
      default:
        fail("quantize_activations: {} is not an activation type", type_name(act_type));
    }
    // Padding bytes are zeroed so rows compare equal byte for byte.
    const size_t used =
        act_type == TensorType::F32
            ? static_cast<size_t>(n_cols) * 4
            : lay.sum_off +
                  static_cast<size_t>(n_cols / (act_type == TensorType::Q8_0 ? 32 : 16)) * 2;
    std::memset(row + used, 0, lay.stride - used);
  }
}

void rows_scalar(const MatrixView& w, const Acts& x, float* y, int64_t y_stride, int64_t r0,
                 int64_t r1) {
  const TensorType t = w.type;
  const int64_t n = w.n_cols;
  switch (t) {
    case TensorType::F32:
    case TensorType::F16:
    case TensorType::BF16: {
      std::vector<float> row(static_cast<size_t>(n));
      for (int64_t r = r0; r < r1; ++r) {
        decode_plain(t, w.row(r), n, row.data());
        for (int64_t tok = 0; tok < x.n_tok; ++tok)
          y[tok * y_stride + r] = dot_f32(row.data(), x.f32(tok), n);
      }
      return;
    }
    case TensorType::Q8_0:
    case TensorType::Q4_0:
    case TensorType::Q4_1:
    case TensorType::Q5_0:
    case TensorType::Q5_1: {
      const int64_t nb = n / 32;
      RowLevels L;
      L.q.resize(static_cast<size_t>(n));
      L.d.resize(static_cast<size_t>(nb));
      L.m.resize(static_cast<size_t>(nb));
      const bool has_min = t == TensorType::Q4_1 || t == TensorType::Q5_1;
      for (int64_t r = r0; r < r1; ++r) {
        decode_legacy(t, w.row(r), nb, L);
        for (int64_t tok = 0; tok < x.n_tok; ++tok)
          y[tok * y_stride + r] = dot_legacy(L, has_min, x, tok, nb);
      }
      return;
    }
    case TensorType::Q4_K:
    case TensorType::Q5_K:
    case TensorType::Q6_K: {
      const int64_t nsb = n / 256;
      RowLevels L;
      L.q.resize(static_cast<size_t>(n));
      L.d.resize(static_cast<size_t>(nsb));
      L.m.resize(static_cast<size_t>(nsb));
      L.sc.resize(static_cast<size_t>(nsb) * 16);
      L.mn.resize(static_cast<size_t>(nsb) * 16);
      for (int64_t r = r0; r < r1; ++r) {
        decode_kquant(t, w.row(r), nsb, L);
        for (int64_t tok = 0; tok < x.n_tok; ++tok)
          y[tok * y_stride + r] = dot_kquant(t, L, x, tok, nsb);
      }
      return;
    }
    default:
      fail("matmul: weight type {} is not supported", type_name(t));
  }
}

}  // namespace hearth::ops::mm
