// Internal to the fused attention kernel files: the attention task on AVX2+FMA, compiled once
// per ISA by the file that includes it (ops/avx2/attention_avx2.cpp; ops/avx512vnni/
// attention_avx512.cpp, where the prefill GEMMs use 512-bit vectors) into namespace
// detail::HEARTH_ATTN_NS; see attention_kernels.h for the reduction order it keeps.
// A task's query vectors (the GQA group's heads times up to kAttnQueryRows query rows) share
// every K/V tile. With few of them (decode: run_direct) the kernels read the encoded rows
// directly, widening F16 with F16C and Q8_0 / Q4_0 as q * d, scores as 8-lane FMA chains over
// head_dim reduced horizontally. With more (prefill: run_tiled) each tile's K rows are decoded
// once, transposed, so that scores are a GEMM with keys in lanes (no horizontal sums), and V's
// rows are read in place (F16, F32) or decoded once (Q8_0, Q4_0). Every path produces exactly
// the f32 values of the reference dequantizer and, for each score and each output, the same
// sequence of operations (see the lane-major note above qk_gemm) - so the path taken, the
// register blocking and the task split do not change a bit.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "ops/attention_kernels.h"
#include "ops/elementwise_avx2_math.h"
#include "quant/blocks.h"
#include "quant/half.h"

#ifndef HEARTH_ATTN_NS
#error "define HEARTH_ATTN_NS (the ISA namespace) before including attention_tasks.h"
#endif

namespace hearth::ops::detail::HEARTH_ATTN_NS {
namespace {

using ops::avx2::exp_ps;

constexpr int64_t T = kAttnTile;

float* thread_scratch(size_t n) {
  thread_local std::vector<float> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

// Decodes n elements of an encoded row to f32 into dst. F32 rows are copied too: rows of one
// head sit a whole token apart (often a multiple of 4 KiB), which makes reading them in place
// thrash a few L1 sets.
const float* decode_row(TensorType type, const uint8_t* src, float* dst, int64_t n) {
  if (type == TensorType::F32) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
    return dst;
  }
  if (type == TensorType::F16) {
    for (int64_t i = 0; i < n; i += 8)
      _mm256_storeu_ps(
          dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i))));
    return dst;
  }
  if (type == TensorType::Q4_0) {
    // 18-byte blocks: element j < 16 the low nibble of qs[j], j + 16 its high nibble;
    // x = (q - 8) * d (the integer exact in float, one rounding, as the reference dequantizer).
    const __m128i mask = _mm_set1_epi8(0x0F);
    const __m256i eight = _mm256_set1_epi32(8);
    for (int64_t b = 0; b < n / kQK; ++b) {
      const uint8_t* blk = src + b * static_cast<int64_t>(sizeof(BlockQ4_0));
      uint16_t dbits;
      std::memcpy(&dbits, blk, 2);
      const __m256 d = _mm256_set1_ps(_cvtsh_ss(dbits));
      const __m128i qs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2));
      const __m128i lo = _mm_and_si128(qs, mask), hi = _mm_and_si128(_mm_srli_epi16(qs, 4), mask);
      const __m128i parts[4] = {lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8)};
      for (int k = 0; k < 4; ++k) {
        const __m256i q = _mm256_sub_epi32(_mm256_cvtepu8_epi32(parts[k]), eight);
        _mm256_storeu_ps(dst + b * kQK + 8 * k, _mm256_mul_ps(_mm256_cvtepi32_ps(q), d));
      }
    }
    return dst;
  }
  // Q8_0: 34-byte blocks, x = q * d (float multiply, as the reference dequantizer).
  for (int64_t b = 0; b < n / kQK; ++b) {
    const uint8_t* blk = src + b * static_cast<int64_t>(sizeof(BlockQ8_0));
    uint16_t dbits;
    std::memcpy(&dbits, blk, 2);
    const __m256 d = _mm256_set1_ps(_cvtsh_ss(dbits));
    const uint8_t* qs = blk + 2;
    for (int k = 0; k < kQK; k += 8) {
      const __m128i q8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(qs + k));
      const __m256 qf = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8));
      _mm256_storeu_ps(dst + b * kQK + k, _mm256_mul_ps(qf, d));
    }
  }
  return dst;
}

// Row readers: 8 elements at column c of an encoded row, as f32 - exactly the values
// decode_row writes, so reading rows directly or through the decoded tile gives the same bits.
struct F32Rows {
  static __m256 load(const uint8_t* row, int64_t c) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + c);
  }
};
struct F16Rows {
  static __m256 load(const uint8_t* row, int64_t c) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * c)));
  }
};
// Q8_0 / Q4_0 rows: load = levels * the block's scale (scale: F16C widening, exact like
// f16_to_f32 without its 256 KiB table); kernels that keep a block's scale in a register use
// levels.
template <class Self, size_t kBytes>
struct QuantRows {
  static constexpr size_t kBlockBytes = kBytes;
  // The block holding column c; its levels start 2 bytes in, after the f16 scale.
  static const uint8_t* block(const uint8_t* row, int64_t c) {
    return row + (c / kQK) * static_cast<int64_t>(kBytes);
  }
  static float scale(const uint8_t* row, int64_t c) {
    uint16_t dbits;
    std::memcpy(&dbits, block(row, c), 2);
    return _cvtsh_ss(dbits);
  }
  static __m256 load(const uint8_t* row, int64_t c) {
    return _mm256_mul_ps(Self::levels(row, c), _mm256_set1_ps(scale(row, c)));
  }
};

struct Q8Rows : QuantRows<Q8Rows, sizeof(BlockQ8_0)> {
  static __m256 levels(const uint8_t* row, int64_t c) {
    const __m128i q8 =
        _mm_loadl_epi64(reinterpret_cast<const __m128i*>(block(row, c) + 2 + c % kQK));
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8));
  }
};

struct Q4Rows : QuantRows<Q4Rows, sizeof(BlockQ4_0)> {
  static __m256 levels(const uint8_t* row, int64_t c) {
    const int64_t k = c % kQK;  // 0, 8: low nibbles of qs[k..k+7]; 16, 24: high of qs[k-16..]
    __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(block(row, c) + 2 + k % 16));
    q = _mm_and_si128(k < 16 ? q : _mm_srli_epi16(q, 4), _mm_set1_epi8(0x0F));
    return _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_cvtepu8_epi32(q), _mm256_set1_epi32(8)));
  }
};

template <class Rows>
constexpr bool kQuantRows = std::is_same_v<Rows, Q8Rows> || std::is_same_v<Rows, Q4Rows>;

// The 32 levels of the Q8_0 / Q4_0 block holding column c as signed bytes (Q4_0's nibbles minus
// 8): levels 0-15 in lo, 16-31 in hi.
template <class Rows>
inline void block_levels(const uint8_t* row, int64_t c, __m128i& lo, __m128i& hi) {
  const uint8_t* qs = Rows::block(row, c) + 2;
  if constexpr (std::is_same_v<Rows, Q8Rows>) {
    lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs + 16));
  } else {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    const __m128i m = _mm_set1_epi8(0x0F), eight = _mm_set1_epi8(8);
    lo = _mm_sub_epi8(_mm_and_si128(q, m), eight);
    hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(q, 4), m), eight);
  }
}

// Rows::load's four vectors of the block at column c (a multiple of 32) with one scale
// conversion (and Q4_0's 16 bytes read once): the same q * d products.
template <class Rows>
inline void quant_block8x4(const uint8_t* row, int64_t c, __m256 out[4]) {
  __m128i lo, hi;
  block_levels<Rows>(row, c, lo, hi);
  const __m256 d = _mm256_set1_ps(Rows::scale(row, c));
  const __m128i q8[4] = {lo, _mm_unpackhi_epi64(lo, lo), hi, _mm_unpackhi_epi64(hi, hi)};
#pragma GCC unroll 4
  for (int u = 0; u < 4; ++u)
    out[u] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8[u])), d);
}

#if defined(__AVX512F__)

// Rows::load's values, 16 at a time (the same q * d products): quant_levels16 the 16 columns
// from c (a multiple of 16, so one block and scale) of a Q8_0 / Q4_0 row, quant_key_pair
// columns c .. c + 7 of row a in lanes 0-7 and of row b in lanes 8-15.
template <class Rows>
inline __m512 quant_levels16(const uint8_t* row, int64_t c) {
  __m128i lo, hi;
  block_levels<Rows>(row, c, lo, hi);
  const __m512 d = _mm512_set1_ps(Rows::scale(row, c));
  return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(c % kQK < 16 ? lo : hi)), d);
}

template <class Rows>
inline __m512 quant_key_pair(const uint8_t* a, const uint8_t* b, int64_t c, __m512 d) {
  const uint8_t* qa8 = Rows::block(a, c) + 2;  // the two rows' levels
  const uint8_t* qb8 = Rows::block(b, c) + 2;
  const int64_t k = c % kQK;
  __m512i qi;
  if constexpr (std::is_same_v<Rows, Q8Rows>) {
    const __m128i qa = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(qa8 + k));
    const __m128i qb = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(qb8 + k));
    qi = _mm512_cvtepi8_epi32(_mm_unpacklo_epi64(qa, qb));
  } else {  // 0, 8: low nibbles of qs[k..k+7]; 16, 24: high of qs[k-16..]
    const __m128i qa = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(qa8 + k % 16));
    const __m128i qb = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(qb8 + k % 16));
    __m128i q = _mm_unpacklo_epi64(qa, qb);
    q = _mm_and_si128(k < 16 ? q : _mm_srli_epi16(q, 4), _mm_set1_epi8(0x0F));
    qi = _mm512_sub_epi32(_mm512_cvtepu8_epi32(q), _mm512_set1_epi32(8));
  }
  return _mm512_mul_ps(_mm512_cvtepi32_ps(qi), d);
}

// Both halves of the block at column c (a multiple of 32) as quant_levels16 gives them, with one
// scale conversion and Q4_0's 16 bytes read once.
template <class Rows>
inline void quant_block32(const uint8_t* row, int64_t c, __m512& lo, __m512& hi) {
  __m128i qlo, qhi;
  block_levels<Rows>(row, c, qlo, qhi);
  const __m512 d = _mm512_set1_ps(Rows::scale(row, c));
  lo = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(qlo)), d);
  hi = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(qhi)), d);
}

// quant_key_pair's d: row a's scale for column c in lanes 0-7, row b's in lanes 8-15.
template <class Rows>
inline __m512 key_pair_scale(const uint8_t* a, const uint8_t* b, int64_t c) {
  return _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(Rows::scale(a, c)),
                              _mm512_set1_ps(Rows::scale(b, c)));
}

// 16 elements at column c of an encoded row: Rows::load's two vectors of 8, in one 512-bit
// vector (F32, F16, Q8_0 and Q4_0 read directly; the same values either way).
template <class Rows>
inline __m512 load16(const uint8_t* row, int64_t c) {
  if constexpr (std::is_same_v<Rows, F32Rows>) {
    return _mm512_loadu_ps(reinterpret_cast<const float*>(row) + c);
  } else if constexpr (std::is_same_v<Rows, F16Rows>) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * c)));
  } else if constexpr (kQuantRows<Rows>) {
    // Half a block (c is a multiple of 16): one scale, 16 levels widened at once.
    return quant_levels16<Rows>(row, c);
  } else {
    const __m256d lo = _mm256_castps_pd(Rows::load(row, c));
    const __m256d hi = _mm256_castps_pd(Rows::load(row, c + 8));
    return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castpd256_pd512(lo), hi, 1));
  }
}
#endif

// Software prefetch of encoded rows, kPrefetchTiles tiles ahead. Into L2 (T1): prefetching into
// L1 (T0) ties up the L1 miss buffers and measured 2x slower; in token-major blocks a head's
// rows are a strided walk that the hardware prefetchers barely follow, so without software
// prefetch decode reads K/V at a third of the rate. The tile-decoded path prefetches a row as it
// decodes one; the direct path (decode) spreads them over its score blocks (TilePrefetch).
#ifndef HEARTH_ATTN_PREFETCH_TILES
#define HEARTH_ATTN_PREFETCH_TILES 1  // measured best (2 and 4 slower)
#endif
constexpr int64_t kPrefetchTiles = HEARTH_ATTN_PREFETCH_TILES;

inline void prefetch_row(const uint8_t* row, int64_t bytes) {
  const char* p = reinterpret_cast<const char*>(row);
  for (int64_t off = 0; off < bytes; off += 64) _mm_prefetch(p + off, _MM_HINT_T1);
  _mm_prefetch(p + bytes - 1, _MM_HINT_T1);
}

// Encoded K and V rows of positions [j0, j0 + n) of the task's head: one offset per block the
// tile touches, then a stride (no block is looked at for an empty tile past the end).
inline void tile_rows(const AttnTask& t, int64_t j0, int64_t n, const uint8_t** k,
                      const uint8_t** v) {
  const KvSeqView& kv = *t.kv;
  const int64_t bt = kv.layout.block_tokens;
  const int64_t first = t.first_pos(0);  // rows before it: the zero row (attention_kernels.h)
  const size_t stride = t.head_major ? t.head_bytes : t.token_bytes;  // from one slot to the next
  for (int64_t i = 0; i < n;) {
    const int64_t pos = j0 + i;
    if (pos < first) {
      k[i] = v[i] = kZeroRow;
      ++i;
      continue;
    }
    // The rows up to the end of pos's block (usually the whole tile): a fixed stride apart.
    const int64_t slot = pos % bt, run = std::min(n - i, bt - slot);
    const size_t off = task_row_offset(t, slot);
    const uint8_t* kr = kv.k_blocks[pos / bt] + off;
    const uint8_t* vr = kv.v_blocks[pos / bt] + off;
    for (const int64_t end = i + run; i < end; ++i, kr += stride, vr += stride) {
      k[i] = kr;
      v[i] = vr;
    }
  }
}

// Prefetches the K and V rows of the first kPrefetchTiles tiles (the loop then keeps that many
// tiles ahead).
inline void prefetch_first_tiles(const AttnTask& t, const uint8_t** kpf, const uint8_t** vpf) {
  const auto hb = static_cast<int64_t>(t.head_bytes);
  for (int64_t i = 0; i < kPrefetchTiles; ++i) {
    const int64_t j0 = t.first_tile() + i * T;
    const int64_t n = t.tile_len(j0);
    tile_rows(t, j0, n, kpf, vpf);
    for (int64_t j = 0; j < n; ++j) {
      prefetch_row(kpf[j], hb);
      prefetch_row(vpf[j], hb);
    }
  }
}

// The next tile's K and V rows, prefetched a few rows at a time as the current tile is read
// rather than all at once: K rows between score blocks (keys_upto(j): rows [k_done, j)), V rows
// between the rows of the first P*V pass (values_upto). A burst of a tile's 256 line prefetches
// fills the core's miss buffers and the kernel stalls behind them, while spread out they overlap
// the arithmetic (decode over 2,048 cached tokens, Zen 5: 1.6x the KV read rate); issuing V's
// with P*V rather than with the scores as well keeps the requests in step with the reads
// (Zen 4, the engine's paged KV: 26.4 -> 29.6 GB/s).
struct TilePrefetch {
  const uint8_t* const* k;
  const uint8_t* const* v;
  int64_t n;  // valid rows of the next tile
  int64_t bytes;
  int64_t k_done = 0, v_done = 0;
  void keys_upto(int64_t j) {
    for (const int64_t end = std::min(j, n); k_done < end; ++k_done) prefetch_row(k[k_done], bytes);
  }
  void values_upto(int64_t j) {
    for (const int64_t end = std::min(j, n); v_done < end; ++v_done) prefetch_row(v[v_done], bytes);
  }
};

// Register blocking. Blocks of up to kMaxMb query vectors. With 3 or more, scores take 2 keys
// per pass (key chunks in registers, query chunks streamed) and P*V 2 column chunks of 8 (V
// chunks in registers, probabilities broadcast). With 1 or 2 (decode: one query row, a small
// GQA group) there are too few independent FMA chains for that, so scores take 8/MB keys and
// P*V 8/MB column chunks per pass instead.
constexpr int kMaxMb = 6;

// Lane sums of 4 vectors, each reduced exactly as hsum_ps reduces one.
inline __m128 hsum4_ps(__m256 a, __m256 b, __m256 c, __m256 d) {
  const __m256 ab = _mm256_hadd_ps(a, b);  // a01 a23 b01 b23 | a45 a67 b45 b67
  const __m256 cd = _mm256_hadd_ps(c, d);
  const __m256 t = _mm256_hadd_ps(ab, cd);  // a0123 b0123 c0123 d0123 | a4567 ...
  return _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
}
inline __m128 hsum2_ps(__m256 a, __m256 b) {
  __m256 t = _mm256_hadd_ps(a, b);
  t = _mm256_hadd_ps(t, t);  // a0123 b0123 a0123 b0123 | a4567 b4567 ...
  return _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
}

// s[m*T + n] = dot(q[m], k[n]) * scale for MB query vectors and NB keys. Each dot is one
// 8-lane FMA chain over head_dim in order, reduced as hsum_ps does.
template <class Rows, int MB, int NB>
inline void qk_block(const float* const* q, const uint8_t* const* k, int64_t hd, float scale,
                     float* s) {
  static_assert(NB == 2 || NB % 4 == 0);
  __m256 acc[MB][NB];
#pragma GCC unroll 16
  for (int m = 0; m < MB; ++m)
#pragma GCC unroll 16
    for (int n = 0; n < NB; ++n) acc[m][n] = _mm256_setzero_ps();
  [[maybe_unused]] __m256 d[NB] = {};  // kKeepScales below
  for (int64_t c = 0; c < hd; c += 8) {
    if constexpr (MB >= 3) {  // keys in registers, queries streamed
      __m256 kv[NB];
#pragma GCC unroll 16
      for (int n = 0; n < NB; ++n) kv[n] = Rows::load(k[n], c);
#pragma GCC unroll 16
      for (int m = 0; m < MB; ++m) {
        __m256 qv = _mm256_loadu_ps(q[m] + c);
        asm("" : "+x"(qv));  // one load, not one folded into each FMA
#pragma GCC unroll 16
        for (int n = 0; n < NB; ++n) acc[m][n] = _mm256_fmadd_ps(qv, kv[n], acc[m][n]);
      }
    } else {  // queries in registers, keys streamed
      // Quantized keys, two query vectors: each key's block scale stays in a register (8
      // accumulators, 2 queries and 4 scales of 16).
      constexpr bool kKeepScales = kQuantRows<Rows> && MB == 2;
      if constexpr (kKeepScales)
        if (c % kQK == 0)
#pragma GCC unroll 16
          for (int n = 0; n < NB; ++n) d[n] = _mm256_set1_ps(Rows::scale(k[n], c));
      __m256 qv[MB];
#pragma GCC unroll 16
      for (int m = 0; m < MB; ++m) qv[m] = _mm256_loadu_ps(q[m] + c);
#pragma GCC unroll 16
      for (int n = 0; n < NB; ++n) {
        __m256 kv;
        if constexpr (kKeepScales)
          kv = _mm256_mul_ps(Rows::levels(k[n], c), d[n]);
        else
          kv = Rows::load(k[n], c);
#pragma GCC unroll 16
        for (int m = 0; m < MB; ++m) acc[m][n] = _mm256_fmadd_ps(qv[m], kv, acc[m][n]);
      }
    }
  }
  const __m128 sc = _mm_set1_ps(scale);
  if constexpr (NB == 2) {
    // Two query vectors' pairs reduced together: {s(m,0), s(m,1), s(m+1,0), s(m+1,1)}.
    int m = 0;
    for (; m + 2 <= MB; m += 2) {
      const __m128 r = _mm_mul_ps(hsum4_ps(acc[m][0], acc[m][1], acc[m + 1][0], acc[m + 1][1]), sc);
      _mm_storel_pi(reinterpret_cast<__m64*>(s + m * T), r);
      _mm_storeh_pi(reinterpret_cast<__m64*>(s + (m + 1) * T), r);
    }
    if (m < MB) {
      const __m128 r = _mm_mul_ps(hsum2_ps(acc[m][0], acc[m][1]), sc);
      _mm_storel_pi(reinterpret_cast<__m64*>(s + m * T), r);
    }
  } else {
#pragma GCC unroll 16
    for (int m = 0; m < MB; ++m) {
#pragma GCC unroll 16
      for (int n = 0; n < NB; n += 4) {
        const __m128 r = hsum4_ps(acc[m][n], acc[m][n + 1], acc[m][n + 2], acc[m][n + 3]);
        _mm_storeu_ps(s + m * T + n, _mm_mul_ps(r, sc));
      }
    }
  }
}

// Scores of MB query vectors against keys [0, jn) (k padded with valid rows up to a multiple
// of 8; the extra scores are discarded by the caller).
#if defined(__AVX512F__)
// Column chunk c of keys a and b as one vector: key a's 8 elements in the low half, b's in the
// high half (each exactly Rows::load's values).
template <class Rows>
inline __m512 load_key_pair(const uint8_t* a, const uint8_t* b, int64_t c) {
  if constexpr (std::is_same_v<Rows, F16Rows>) {
    const __m128i ha = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + 2 * c));
    const __m128i hb = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2 * c));
    return _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(ha), hb, 1));
  } else {
    const __m256d lo = _mm256_castps_pd(Rows::load(a, c));
    const __m256d hi = _mm256_castps_pd(Rows::load(b, c));
    return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castpd256_pd512(lo), hi, 1));
  }
}

// qk_block for one or two query vectors with two keys per 512-bit vector: each half runs key
// 2i or 2i+1's own 8-lane chain (query chunk broadcast to both halves), and the halves are
// reduced by hsum4_ps as qk_block reduces them - the same bits in half the FMAs.
template <class Rows, int MB, int NB>
inline void qk_block16(const float* const* q, const uint8_t* const* k, int64_t hd, float scale,
                       float* s) {
  static_assert(NB % 4 == 0 && MB <= 2);
  constexpr int NP = NB / 2;  // key pairs
  __m512 acc[MB][NP];
#pragma GCC unroll 16
  for (int m = 0; m < MB; ++m)
#pragma GCC unroll 16
    for (int i = 0; i < NP; ++i) acc[m][i] = _mm512_setzero_ps();
  [[maybe_unused]] __m512 d[NP];  // quantized keys: each pair's scales, once per block
  for (int64_t c = 0; c < hd; c += 8) {
    if constexpr (kQuantRows<Rows>)
      if (c % kQK == 0)
#pragma GCC unroll 16
        for (int i = 0; i < NP; ++i) d[i] = key_pair_scale<Rows>(k[2 * i], k[2 * i + 1], c);
    __m512 qv[MB];
#pragma GCC unroll 16
    for (int m = 0; m < MB; ++m)
      qv[m] = _mm512_castpd_ps(_mm512_broadcast_f64x4(_mm256_castps_pd(_mm256_loadu_ps(q[m] + c))));
#pragma GCC unroll 16
    for (int i = 0; i < NP; ++i) {
      __m512 kv;
      if constexpr (kQuantRows<Rows>)
        kv = quant_key_pair<Rows>(k[2 * i], k[2 * i + 1], c, d[i]);
      else
        kv = load_key_pair<Rows>(k[2 * i], k[2 * i + 1], c);
#pragma GCC unroll 16
      for (int m = 0; m < MB; ++m) acc[m][i] = _mm512_fmadd_ps(qv[m], kv, acc[m][i]);
    }
  }
  const __m128 sc = _mm_set1_ps(scale);
  auto lo = [](__m512 v) { return _mm512_castps512_ps256(v); };
  auto hi = [](__m512 v) {
    return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
  };
#pragma GCC unroll 16
  for (int m = 0; m < MB; ++m)
#pragma GCC unroll 16
    for (int i = 0; i < NP; i += 2) {
      const __m128 r = hsum4_ps(lo(acc[m][i]), hi(acc[m][i]), lo(acc[m][i + 1]), hi(acc[m][i + 1]));
      _mm_storeu_ps(s + m * T + 2 * i, _mm_mul_ps(r, sc));
    }
}
#endif

// Scores of MB query vectors against keys [0, jn) (k padded with valid rows up to the tile's
// end; the extra scores are discarded by the caller), prefetching the next tile's K rows as it
// goes; in the AVX-512 build two keys per vector where key_pairs (attention_key_pairs()).
template <class Rows, int MB>
inline void qk_rows(const float* const* q, const uint8_t* const* k, int64_t jn, int64_t hd,
                    float scale, float* s, TilePrefetch& pf, [[maybe_unused]] bool key_pairs) {
#if defined(__AVX512F__)
  if constexpr (MB <= 2) {
    if (key_pairs) {
      constexpr int NB = 16 / MB;
      for (int64_t n = 0; n < jn; n += NB) {
        qk_block16<Rows, MB, NB>(q, k + n, hd, scale, s + n);
        pf.keys_upto(n + NB);
      }
      return;
    }
  }
#endif
  constexpr int NB = MB >= 3 ? 2 : 8 / MB;
  for (int64_t n = 0; n < jn; n += NB) {
    qk_block<Rows, MB, NB>(q, k + n, hd, scale, s + n);
    pf.keys_upto(n + NB);
  }
}

#if defined(__AVX512F__)
// pv_block's column chunks of 8, two to a vector of 16: C16 vectors (16*C16 columns) per query
// vector (the same operations on every lane).
template <class Rows, int MB, int C16 = 1>
inline void pv_block16(float* const* o, const float* alpha, const float* p, const uint8_t* const* v,
                       int64_t jn, int64_t c0, TilePrefetch* pf = nullptr) {
  __m512 acc[MB][C16];
#pragma GCC unroll 16
  for (int m = 0; m < MB; ++m)
#pragma GCC unroll 16
    for (int c = 0; c < C16; ++c)
      acc[m][c] = _mm512_mul_ps(_mm512_loadu_ps(o[m] + c0 + 16 * c), _mm512_set1_ps(alpha[m]));
  for (int64_t j = 0; j < jn; ++j) {
    if (pf) pf->values_upto(j + 1);
    if constexpr (kQuantRows<Rows> && C16 % 2 == 0) {  // whole blocks (c0: a multiple of 32)
#pragma GCC unroll 16
      for (int c = 0; c < C16; c += 2) {
        __m512 lo, hi;
        quant_block32<Rows>(v[j], c0 + 16 * c, lo, hi);
#pragma GCC unroll 16
        for (int m = 0; m < MB; ++m) {
          const __m512 pj = _mm512_set1_ps(p[m * T + j]);
          acc[m][c] = _mm512_fmadd_ps(pj, lo, acc[m][c]);
          acc[m][c + 1] = _mm512_fmadd_ps(pj, hi, acc[m][c + 1]);
        }
      }
      continue;
    }
#pragma GCC unroll 16
    for (int c = 0; c < C16; ++c) {
      const __m512 vv = load16<Rows>(v[j], c0 + 16 * c);
#pragma GCC unroll 16
      for (int m = 0; m < MB; ++m)
        acc[m][c] = _mm512_fmadd_ps(_mm512_set1_ps(p[m * T + j]), vv, acc[m][c]);
    }
  }
#pragma GCC unroll 16
  for (int m = 0; m < MB; ++m)
#pragma GCC unroll 16
    for (int c = 0; c < C16; ++c) _mm512_storeu_ps(o[m] + c0 + 16 * c, acc[m][c]);
}
#endif

// o[m][c0 .. c0 + 8*CB) = o*alpha[m] + sum_{j < jn} p[m*T + j] * v[j], j in order.
template <class Rows, int MB, int CB, bool kVInRegs = (MB >= 3)>
inline void pv_block(float* const* o, const float* alpha, const float* p, const uint8_t* const* v,
                     int64_t jn, int64_t c0, TilePrefetch* pf = nullptr) {
#if defined(__AVX512F__)
  if constexpr (CB == 2) return pv_block16<Rows, MB>(o, alpha, p, v, jn, c0, pf);
#endif
  __m256 acc[MB][CB];
#pragma GCC unroll 16
  for (int m = 0; m < MB; ++m) {
    const __m256 a = _mm256_set1_ps(alpha[m]);
#pragma GCC unroll 16
    for (int c = 0; c < CB; ++c) acc[m][c] = _mm256_mul_ps(_mm256_loadu_ps(o[m] + c0 + 8 * c), a);
  }
  [[maybe_unused]] const bool whole_blocks = c0 % kQK == 0;
  for (int64_t j = 0; j < jn; ++j) {
    if (pf) pf->values_upto(j + 1);
    const uint8_t* vj = v[j];
    if constexpr (kVInRegs) {  // V chunks in registers, probabilities streamed
      __m256 vv[CB];
#pragma GCC unroll 16
      for (int c = 0; c < CB; ++c) vv[c] = Rows::load(vj, c0 + 8 * c);
#pragma GCC unroll 16
      for (int m = 0; m < MB; ++m) {
        const __m256 pb = _mm256_broadcast_ss(p + m * T + j);
#pragma GCC unroll 16
        for (int c = 0; c < CB; ++c) acc[m][c] = _mm256_fmadd_ps(pb, vv[c], acc[m][c]);
      }
    } else {  // probabilities in registers, V chunks streamed
      __m256 pb[MB];
#pragma GCC unroll 16
      for (int m = 0; m < MB; ++m) pb[m] = _mm256_broadcast_ss(p + m * T + j);
      if constexpr (kQuantRows<Rows> && CB % 4 == 0) {
        if (whole_blocks) {  // one scale per block, not per vector
#pragma GCC unroll 16
          for (int c = 0; c < CB; c += 4) {
            __m256 vv[4];
            quant_block8x4<Rows>(vj, c0 + 8 * c, vv);
#pragma GCC unroll 16
            for (int u = 0; u < 4; ++u)
#pragma GCC unroll 16
              for (int m = 0; m < MB; ++m)
                acc[m][c + u] = _mm256_fmadd_ps(pb[m], vv[u], acc[m][c + u]);
          }
          continue;
        }
      }
#pragma GCC unroll 16
      for (int c = 0; c < CB; ++c) {
        const __m256 vv = Rows::load(vj, c0 + 8 * c);
#pragma GCC unroll 16
        for (int m = 0; m < MB; ++m) acc[m][c] = _mm256_fmadd_ps(pb[m], vv, acc[m][c]);
      }
    }
  }
#pragma GCC unroll 16
  for (int m = 0; m < MB; ++m)
#pragma GCC unroll 16
    for (int c = 0; c < CB; ++c) _mm256_storeu_ps(o[m] + c0 + 8 * c, acc[m][c]);
}

// P*V of MB query vectors over the whole head, a block of 8*CB columns at a time; the first
// block's pass over the rows also issues pf's V prefetches.
template <class Rows, int MB, int CB = (MB >= 3 ? 2 : 8 / MB), bool kVInRegs = (MB >= 3)>
inline void pv_rows(float* const* o, const float* alpha, const float* p, const uint8_t* const* v,
                    int64_t jn, int64_t hd, TilePrefetch* pf = nullptr) {
  int64_t c0 = 0;
#if defined(__AVX512F__)
  if constexpr (MB <= 2) {  // 8 chains of 16 columns (64 per pass for two vectors)
    constexpr int C16 = 8 / MB;
    for (; c0 + 16 * C16 <= hd; c0 += 16 * C16, pf = nullptr)
      pv_block16<Rows, MB, C16>(o, alpha, p, v, jn, c0, pf);
    for (; c0 + 16 <= hd; c0 += 16, pf = nullptr)
      pv_block16<Rows, MB, 1>(o, alpha, p, v, jn, c0, pf);
  }
#endif
  for (; c0 + 8 * CB <= hd; c0 += 8 * CB, pf = nullptr)
    pv_block<Rows, MB, CB, kVInRegs>(o, alpha, p, v, jn, c0, pf);
  for (; c0 < hd; c0 += 8, pf = nullptr)
    pv_block<Rows, MB, 1, kVInRegs>(o, alpha, p, v, jn, c0, pf);
}

// Tile-decoded path: P*V blocks of kPvMb query vectors x kPvCb column chunks of 8 (V chunks in
// registers, probabilities broadcast). Measured the same as 3x4 (probabilities in registers),
// 4x2 and 4x3 within noise.
constexpr int kPvMb = 6;
constexpr int kPvCb = 2;

// ---- Tile-decoded path (prefill): scores as a GEMM over a transposed K tile. ----
//
// A score above is, per lane l of the 8-lane chain, P_l = the in-order FMA chain over the
// columns c = l, l+8, l+16, ... of q*k, then ((P0+P1)+(P2+P3))+((P4+P5)+(P6+P7)) (how hsum4_ps
// reduces), times scale. The GEMM form computes exactly that with keys in lanes and no
// horizontal reductions: K's tile is stored transposed with its columns in "lane-major" order
// (row r = l*(hd/8) + i holds column c = 8i + l of the tile's T keys), the queries in the same
// column order, so P_l for 8 keys is one vector chain over rows l*(hd/8) .. (l+1)*(hd/8)-1 of
// broadcast(q[r]) * kt[r], and the 8 partial vectors combine in the same tree. Every score
// therefore has the bits of the direct kernels', whatever register tile computes it.

// In-register 8x8 transpose: r[l] lane j becomes r[j] lane l.
inline void transpose8(__m256 r[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
  r[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
  r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
  r[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
  r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
  r[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
  r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
  r[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
  r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

// Query m's columns in the same lane-major order: qt[l*(hd/8) + i] = q[8i + l] (8x8 blocks
// transposed in registers when hd/8 is a multiple of 8).
inline void permute_query(const float* q, int64_t hd, float* qt) {
  const int64_t h8 = hd / 8;
  if (h8 % 8 != 0) {
    for (int64_t i = 0; i < h8; ++i)
      for (int l = 0; l < 8; ++l) qt[l * h8 + i] = q[8 * i + l];
    return;
  }
  for (int64_t i0 = 0; i0 < h8; i0 += 8) {
    __m256 r[8];
    for (int k = 0; k < 8; ++k) r[k] = _mm256_loadu_ps(q + 8 * (i0 + k));
    transpose8(r);
    for (int l = 0; l < 8; ++l) _mm256_storeu_ps(qt + l * h8 + i0, r[l]);
  }
}

// Score register tiles: kQkMr query vectors x kQkNr vectors of 8 keys (12 accumulators). 3x4
// and 4x2 measured the same within noise, 2x4 about 10% slower.
constexpr int kQkMr = 6;
constexpr int kQkNr = 2;

#if defined(__AVX512F__)
// qk_gemm's two vectors of 8 keys as one vector of 16: per lane the same chains and the same
// reduction tree, so the same scores.
template <int MR>
inline void qk_gemm16(const float* qt, const float* kt, int64_t n0, int64_t hd, float scale,
                      float* s) {
  const int64_t h8 = hd / 8;
  __m512 acc[MR];
  __m512 part[3][MR];  // pending partial sums of the reduction tree
  auto chain = [&](int l) __attribute__((always_inline)) {
#pragma GCC unroll 16
    for (int m = 0; m < MR; ++m) acc[m] = _mm512_setzero_ps();
    const float* kr = kt + l * h8 * T + 8 * n0;
    const float* qr = qt + l * h8;
    for (int64_t i = 0; i < h8; ++i) {
      const __m512 kv = _mm512_loadu_ps(kr + i * T);
#pragma GCC unroll 16
      for (int m = 0; m < MR; ++m)
        acc[m] = _mm512_fmadd_ps(_mm512_set1_ps(qr[m * hd + i]), kv, acc[m]);
    }
  };
  auto save = [&](int b) __attribute__((always_inline)) {
#pragma GCC unroll 16
    for (int m = 0; m < MR; ++m) part[b][m] = acc[m];
  };
  auto add = [&](int b) __attribute__((always_inline)) {
#pragma GCC unroll 16
    for (int m = 0; m < MR; ++m) acc[m] = _mm512_add_ps(acc[m], part[b][m]);
  };
  chain(0), save(0);
  chain(1), add(0), save(0);  // P0+P1
  chain(2), save(1);
  chain(3), add(1), add(0), save(0);  // (P0+P1)+(P2+P3)
  chain(4), save(1);
  chain(5), add(1), save(1);  // P4+P5
  chain(6), save(2);
  chain(7), add(2), add(1), add(0);  // ((P6+P7)+(P4+P5)) + (P0+P1+P2+P3)
  const __m512 sc = _mm512_set1_ps(scale);
#pragma GCC unroll 16
  for (int m = 0; m < MR; ++m) _mm512_storeu_ps(s + m * T + 8 * n0, _mm512_mul_ps(acc[m], sc));
}
#endif

// s[m*T + 8*(n0+n) + lane] for MR query vectors (lane-major rows qt + m*hd) and NR vectors of 8
// keys starting at key vector n0 of the transposed tile kt.
template <int MR, int NR>
inline void qk_gemm(const float* qt, const float* kt, int64_t n0, int64_t hd, float scale,
                    float* s) {
#if defined(__AVX512F__)
  if constexpr (NR == 2) return qk_gemm16<MR>(qt, kt, n0, hd, scale, s);
#endif
  const int64_t h8 = hd / 8;
  __m256 acc[MR][NR];
  __m256 part[3][MR][NR];  // pending partial sums of the reduction tree
  auto chain = [&](int l) __attribute__((always_inline)) {
#pragma GCC unroll 16
    for (int m = 0; m < MR; ++m)
#pragma GCC unroll 16
      for (int n = 0; n < NR; ++n) acc[m][n] = _mm256_setzero_ps();
    const float* kr = kt + l * h8 * T + 8 * n0;
    const float* qr = qt + l * h8;
    for (int64_t i = 0; i < h8; ++i) {
      if constexpr (MR > NR) {  // keys in registers, queries broadcast as needed
        __m256 kv[NR];
#pragma GCC unroll 16
        for (int n = 0; n < NR; ++n) kv[n] = _mm256_loadu_ps(kr + i * T + 8 * n);
#pragma GCC unroll 16
        for (int m = 0; m < MR; ++m) {
          const __m256 qb = _mm256_broadcast_ss(qr + m * hd + i);
#pragma GCC unroll 16
          for (int n = 0; n < NR; ++n) acc[m][n] = _mm256_fmadd_ps(qb, kv[n], acc[m][n]);
        }
      } else {  // queries in registers, keys loaded as needed
        __m256 qb[MR];
#pragma GCC unroll 16
        for (int m = 0; m < MR; ++m) qb[m] = _mm256_broadcast_ss(qr + m * hd + i);
#pragma GCC unroll 16
        for (int n = 0; n < NR; ++n) {
          const __m256 kv = _mm256_loadu_ps(kr + i * T + 8 * n);
#pragma GCC unroll 16
          for (int m = 0; m < MR; ++m) acc[m][n] = _mm256_fmadd_ps(qb[m], kv, acc[m][n]);
        }
      }
    }
  };
  auto save = [&](int b) __attribute__((always_inline)) {
#pragma GCC unroll 16
    for (int m = 0; m < MR; ++m)
#pragma GCC unroll 16
      for (int n = 0; n < NR; ++n) part[b][m][n] = acc[m][n];
  };
  auto add = [&](int b) __attribute__((always_inline)) {
#pragma GCC unroll 16
    for (int m = 0; m < MR; ++m)
#pragma GCC unroll 16
      for (int n = 0; n < NR; ++n) acc[m][n] = _mm256_add_ps(acc[m][n], part[b][m][n]);
  };
  chain(0), save(0);
  chain(1), add(0), save(0);  // P0+P1
  chain(2), save(1);
  chain(3), add(1), add(0), save(0);  // (P0+P1)+(P2+P3)
  chain(4), save(1);
  chain(5), add(1), save(1);  // P4+P5
  chain(6), save(2);
  chain(7), add(2), add(1), add(0);  // ((P6+P7)+(P4+P5)) + (P0+P1+P2+P3)
  const __m256 sc = _mm256_set1_ps(scale);
#pragma GCC unroll 16
  for (int m = 0; m < MR; ++m)
#pragma GCC unroll 16
    for (int n = 0; n < NR; ++n)
      _mm256_storeu_ps(s + m * T + 8 * (n0 + n), _mm256_mul_ps(acc[m][n], sc));
}

// Runs kernel<mb>(m, mb) over query vectors [m0, m1) in blocks of up to MAX.
template <int MAX, typename F>
inline void for_blocks(int64_t m0, int64_t m1, F&& f) {
  int64_t m = m0;
  for (; m + MAX <= m1; m += MAX) f(std::integral_constant<int, MAX>{}, m);
  if constexpr (MAX > 1) {
    const int64_t rest = m1 - m;
    if (rest > 0) {
      [&]<int... I>(std::integer_sequence<int, I...>) {
        ((rest == I + 1 ? (f(std::integral_constant<int, I + 1>{}, m), 0) : 0), ...);
      }
      (std::make_integer_sequence<int, MAX - 1>{});
    }
  }
}

// Scores of query vectors [m0, m1) against key vectors [0, nk) of the transposed tile.
inline void qk_tile(const float* qt, const float* kt, int64_t m0, int64_t m1, int64_t nk,
                    int64_t hd, float scale, float* s) {
  for_blocks<kQkMr>(m0, m1, [&](auto mr, int64_t m) {
    constexpr int MR = decltype(mr)::value;
    int64_t n = 0;
    for (; n + kQkNr <= nk; n += kQkNr)
      qk_gemm<MR, kQkNr>(qt + m * hd, kt, n, hd, scale, s + m * T);
    for (; n < nk; ++n) qk_gemm<MR, 1>(qt + m * hd, kt, n, hd, scale, s + m * T);
  });
}

// One query vector's online-softmax update (softmax_rows below), one lane at a time: for a few
// vectors (decode).
inline float softmax_tile(float* s, int64_t first, int64_t valid, float& mx, float& l) {
  const float kNegInf = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < first; ++j) s[j] = kNegInf;
  for (int64_t j = valid; j < T; ++j) s[j] = kNegInf;
  __m256 v[T / 8];
  __m256 vmax = _mm256_set1_ps(kNegInf);
  for (int i = 0; i < T / 8; ++i) {
    v[i] = _mm256_loadu_ps(s + 8 * i);
    vmax = _mm256_max_ps(vmax, v[i]);
  }
  const float m_new = std::max(mx, ops::avx2::hmax_ps(vmax));
  const float alpha = mx == kNegInf ? 0.0f : _mm256_cvtss_f32(exp_ps(_mm256_set1_ps(mx - m_new)));
  const __m256 mv = _mm256_set1_ps(m_new);
  __m256 sum = _mm256_setzero_ps();
  for (int i = 0; i < T / 8; ++i) {
    const __m256 e = exp_ps(_mm256_sub_ps(v[i], mv));
    _mm256_storeu_ps(s + 8 * i, e);
    sum = _mm256_add_ps(sum, e);
  }
  // l*alpha + sum as one explicit FMA (never left to the compiler's contraction choices).
  l = _mm_cvtss_f32(
      _mm_fmadd_ss(_mm_set_ss(l), _mm_set_ss(alpha), _mm_set_ss(ops::avx2::hsum_ps(sum))));
  mx = m_new;
  return alpha;
}

// Online-softmax update of query vectors [m0, m1) with their T-wide score rows s + m*T (entries
// before first(m) - a sliding window's start - or at or beyond valid(m) are set to -inf here):
// leaves p_j in s, alpha in alpha[m], and updates mx[m] and l[m]. Per vector: tile max m' = max(mx,
// max_j s_j), alpha = e^(mx - m') (0 while mx is -inf), p_j = e^(s_j - m'), l = fma(l, alpha,
// hsum(((p0..7 + p8..15) + p16..23) + p24..31)), hsum in hsum_ps's order. Eight vectors are done at
// once - their maxima, alphas, sums and l updates as lanes of one vector - which changes no value,
// only how many run side by side.
template <typename First, typename Valid>
inline void softmax_rows(float* s, int64_t m0, int64_t m1, First&& first, Valid&& valid, float* mx,
                         float* l, float* alpha) {
  static_assert(T == 32);
  if (m1 - m0 < 4) {
    for (int64_t m = m0; m < m1; ++m)
      alpha[m] = softmax_tile(s + m * T, first(m), valid(m), mx[m], l[m]);
    return;
  }
  const float kNegInf = -std::numeric_limits<float>::infinity();
  const __m256 neg_inf = _mm256_set1_ps(kNegInf);
  for (int64_t m = m0; m < m1; m += 8) {
    const int n = static_cast<int>(std::min<int64_t>(8, m1 - m));
    float mxa[8], la[8], m_new[8];
    __m256 vmax[8];
    for (int r = 0; r < 8; ++r) {
      if (r >= n) {
        mxa[r] = kNegInf, la[r] = 0.0f, vmax[r] = vmax[0];
        continue;
      }
      mxa[r] = mx[m + r], la[r] = l[m + r];
      float* sr = s + (m + r) * T;
      for (int64_t j = 0; j < first(m + r); ++j) sr[j] = kNegInf;
      for (int64_t j = valid(m + r); j < T; ++j) sr[j] = kNegInf;
      vmax[r] = _mm256_max_ps(_mm256_max_ps(_mm256_loadu_ps(sr), _mm256_loadu_ps(sr + 8)),
                              _mm256_max_ps(_mm256_loadu_ps(sr + 16), _mm256_loadu_ps(sr + 24)));
    }
    transpose8(vmax);  // lane r of vmax[i]: lane i of row r's maxima
    __m256 tmax = vmax[0];
    for (int i = 1; i < 8; ++i) tmax = _mm256_max_ps(tmax, vmax[i]);
    const __m256 mxv = _mm256_loadu_ps(mxa);
    const __m256 mnew = _mm256_max_ps(tmax, mxv);  // mx where equal, as std::max(mx, tile max)
    const __m256 av =
        _mm256_andnot_ps(_mm256_cmp_ps(mxv, neg_inf, _CMP_EQ_OQ), exp_ps(_mm256_sub_ps(mxv, mnew)));
    _mm256_storeu_ps(m_new, mnew);
    __m256 sums[8];
    for (int r = 0; r < 8; ++r) {
      if (r >= n) {
        sums[r] = _mm256_setzero_ps();
        continue;
      }
      float* sr = s + (m + r) * T;
      const __m256 mv = _mm256_set1_ps(m_new[r]);
      __m256 sum = _mm256_setzero_ps();
      for (int i = 0; i < T / 8; ++i) {
        const __m256 e = exp_ps(_mm256_sub_ps(_mm256_loadu_ps(sr + 8 * i), mv));
        _mm256_storeu_ps(sr + 8 * i, e);
        sum = _mm256_add_ps(sum, e);
      }
      sums[r] = sum;
    }
    // Lane r: row r's sum reduced as hsum_ps does, ((l0+l1)+(l2+l3)) + ((l4+l5)+(l6+l7)).
    const __m256 abcd =
        _mm256_hadd_ps(_mm256_hadd_ps(sums[0], sums[1]), _mm256_hadd_ps(sums[2], sums[3]));
    const __m256 efgh =
        _mm256_hadd_ps(_mm256_hadd_ps(sums[4], sums[5]), _mm256_hadd_ps(sums[6], sums[7]));
    const __m256 hs = _mm256_add_ps(_mm256_permute2f128_ps(abcd, efgh, 0x20),
                                    _mm256_permute2f128_ps(abcd, efgh, 0x31));
    // l*alpha + sum as one explicit FMA (never left to the compiler's contraction choices).
    const __m256 lv = _mm256_fmadd_ps(_mm256_loadu_ps(la), av, hs);
    float av_a[8], lv_a[8];
    _mm256_storeu_ps(av_a, av);
    _mm256_storeu_ps(lv_a, lv);
    for (int r = 0; r < n; ++r) {
      alpha[m + r] = av_a[r];
      l[m + r] = lv_a[r];
      mx[m + r] = m_new[r];
    }
  }
}

// out = o * (1/l) for each of the task's query vectors: the last step of the online softmax.
inline void write_outputs(const AttnTask& t, const SoftmaxState& st) {
  const int64_t hd = t.head_dim, M = t.n_rows * t.group;
  for (int64_t m = 0; m < M; ++m) {
    const __m256 inv = _mm256_set1_ps(1.0f / st.l[m]);
    float* out = t.out + (m / t.group) * t.row_stride + (m % t.group) * hd;
    for (int64_t i = 0; i < hd; i += 8)
      _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_loadu_ps(st.o + m * hd + i), inv));
  }
}

// The direct task (few query vectors: decode, small batches): kernels read the encoded rows in
// place - each element is converted once per query block anyway.
template <class Rows>
void run_direct(const AttnTask& t) {
  const int64_t hd = t.head_dim, G = t.group, M = t.n_rows * G;
  const auto uhd = static_cast<size_t>(hd), uT = static_cast<size_t>(T);
  const auto uM = static_cast<size_t>(M);
  float* s = thread_scratch(uM * (uT + uhd) + SoftmaxState::floats(uM, uhd));  // [M][T] scores
  float* qc = s + uM * uT;  // [M][hd] the queries, contiguous
  const SoftmaxState st(qc + uM * uhd, uM, uhd);
  float *o = st.o, *mx = st.mx, *l = st.l, *alpha = st.alpha;

  // Per query vector: its q and o rows.
  const float* qp[kMaxMb];
  float* op[kMaxMb];
  for (int64_t m = 0; m < M; ++m) {
    // Query rows of a chunk sit n_head*head_dim floats apart, often a multiple of 4 KiB: read in
    // place, a block's queries would share a few L1 sets. A contiguous copy avoids that.
    std::memcpy(qc + m * hd, t.q + (m / G) * t.row_stride + (m % G) * hd, uhd * sizeof(float));
    qp[m] = qc + m * hd;
    op[m] = o + m * hd;
  }
  const uint8_t* krow[T];  // encoded rows of the current tile
  const uint8_t* vrow[T];
  const uint8_t* kpf[T];  // and of the tile kPrefetchTiles ahead
  const uint8_t* vpf[T];
  const int64_t p_last = t.pos_first + t.n_rows - 1;
  const auto hb = static_cast<int64_t>(t.head_bytes);
  prefetch_first_tiles(t, kpf, vpf);
  for (int64_t j0 = t.first_tile(); j0 <= p_last; j0 += T) {
    const int64_t jn = t.tile_len(j0);
    tile_rows(t, j0, jn, krow, vrow);
    int64_t n_pf = t.tile_len(j0 + kPrefetchTiles * T);
    tile_rows(t, j0 + kPrefetchTiles * T, n_pf, kpf, vpf);
    if (n_pf == 0 && t.next != nullptr) {  // the last tile: prefetch the next task's first
      const AttnTask& nt = *t.next;
      n_pf = nt.tile_len(nt.first_tile());
      tile_rows(nt, nt.first_tile(), n_pf, kpf, vpf);
    }
    TilePrefetch pf{kpf, vpf, n_pf, hb};
    for (int64_t j = jn; j < T; ++j) krow[j] = krow[0];  // padding, scores discarded

    // Query vectors whose position is >= j0 take part in this tile.
    const int64_t m_begin = std::max<int64_t>(0, j0 - t.pos_first) * G;
    const int64_t m_end = std::max(m_begin, t.end_row(j0) * G);  // windows starting later skip it
    auto first = [&](int64_t m) { return t.first_pos(m / G) - j0; };
    for_blocks<kMaxMb>(m_begin, m_end, [&](auto mb, int64_t m) {
      qk_rows<Rows, decltype(mb)::value>(&qp[m], krow, jn, hd, t.scale, s + m * T, pf, t.key_pairs);
    });
    pf.keys_upto(T);
    softmax_rows(
        s, m_begin, m_end, first,
        [&](int64_t m) { return std::min(jn, t.pos_first + m / G - j0 + 1); }, mx, l, alpha);

    // Vectors that see every position of the tile go through the blocked kernel; the others
    // (the diagonal) one at a time with their own end. Same operation sequence either way.
    const int64_t r_full = std::clamp<int64_t>(j0 + jn - 1 - t.pos_first, 0, t.n_rows);
    const int64_t m_full = std::min(m_end, std::max(m_begin, r_full * G));
    TilePrefetch* vpf_first = &pf;  // the first P*V pass issues the V prefetches
    for (int64_t m = m_begin; m < m_full; ++m) {
      const int64_t valid = std::min(jn, t.pos_first + m / G - j0 + 1);
      pv_rows<Rows, 1>(&op[m], alpha + m, s + m * T, vrow, valid, hd,
                       std::exchange(vpf_first, nullptr));
    }
    for_blocks<kMaxMb>(m_full, m_end, [&](auto mb, int64_t m) {
      pv_rows<Rows, decltype(mb)::value>(&op[m], alpha + m, s + m * T, vrow, jn, hd,
                                         std::exchange(vpf_first, nullptr));
    });
    pf.values_upto(T);
  }
  write_outputs(t, st);
}

// Decodes keys [0, nk*8) of a tile (encoded rows k[], padded to a multiple of 8 with valid
// rows) into kt, transposed and lane-major: kt[(l*(hd/8) + i)*T + j] = k[j][8i + l]. F16 rows
// are read in place; the others 8 at a time through decode_row into `stage` (8*hd floats):
// Q8_0 / Q4_0 then convert each block's scale once, not once per 8 elements, and F32 rows of
// token-major blocks (a multiple of 4 KiB apart) do not all land in one L1 set.
template <class Rows>
inline void decode_kt(TensorType type, const uint8_t* const* k, int64_t nk, int64_t hd,
                      float* stage, float* kt) {
  constexpr bool kInPlace = std::is_same_v<Rows, F16Rows>;
  using KRows = std::conditional_t<kInPlace, Rows, F32Rows>;
  const int64_t h8 = hd / 8;
  for (int64_t g = 0; g < nk; ++g) {
    const uint8_t* rows[8];
    for (int j = 0; j < 8; ++j) {
      if constexpr (kInPlace) {
        rows[j] = k[8 * g + j];
      } else {
        rows[j] =
            reinterpret_cast<const uint8_t*>(decode_row(type, k[8 * g + j], stage + j * hd, hd));
      }
    }
    for (int64_t i = 0; i < h8; ++i) {
      __m256 r[8];
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) r[j] = KRows::load(rows[j], 8 * i);
      transpose8(r);
#pragma GCC unroll 8
      for (int l = 0; l < 8; ++l) _mm256_storeu_ps(kt + (l * h8 + i) * T + 8 * g, r[l]);
    }
  }
}

// The tile-decoded task (prefill): per tile, K's rows are decoded once into the transposed kt
// for the score GEMM (qk_tile), and V's rows read in place (F16) or decoded once into f32 rows
// (the other types) in the same buffer; every query block then shares them.
template <class Rows>
void run_tiled(const AttnTask& t) {
  constexpr bool kVInPlace = std::is_same_v<Rows, F16Rows>;
  using VRows = std::conditional_t<kVInPlace, Rows, F32Rows>;
  const TensorType type = t.kv->layout.type;
  const int64_t hd = t.head_dim, G = t.group, M = t.n_rows * G;
  const auto uhd = static_cast<size_t>(hd), uT = static_cast<size_t>(T);
  const auto uM = static_cast<size_t>(M);
  // One tile buffer (16 KiB at head_dim 128), the K tile during the scores, then the V rows;
  // the staging rows of K decoding (all types but F16) after it.
  const size_t tile_floats = uT * uhd + (kVInPlace ? 0 : 8 * uhd);
  float* kt = thread_scratch(tile_floats + uM * (uT + uhd) + SoftmaxState::floats(uM, uhd));
  float* stage = kt + uT * uhd;
  float* s = kt + tile_floats;  // [M][T] scores, then probabilities
  float* qt = s + uM * uT;      // [M][hd] the queries, lane-major
  const SoftmaxState st(qt + uM * uhd, uM, uhd);
  float *o = st.o, *mx = st.mx, *l = st.l, *alpha = st.alpha;
  // Query rows of a chunk sit n_head*head_dim floats apart, often a multiple of 4 KiB: read in
  // place, a block's queries would share a few L1 sets. The (permuted) copy avoids that too.
  for (int64_t m = 0; m < M; ++m)
    permute_query(t.q + (m / G) * t.row_stride + (m % G) * hd, hd, qt + m * hd);
  float* op[kPvMb];

  const uint8_t* krow[T];  // encoded rows of the current tile
  const uint8_t* vsrc[T];
  const uint8_t* vrow[T];  // the V rows P*V reads
  const uint8_t* kpf[T];   // encoded rows of the tile kPrefetchTiles ahead
  const uint8_t* vpf[T];
  const int64_t p_last = t.pos_first + t.n_rows - 1;
  const auto hb = static_cast<int64_t>(t.head_bytes);
  prefetch_first_tiles(t, kpf, vpf);
  for (int64_t j0 = t.first_tile(); j0 <= p_last; j0 += T) {
    const int64_t jn = t.tile_len(j0);
    tile_rows(t, j0, jn, krow, vsrc);
    const int64_t n_pf = t.tile_len(j0 + kPrefetchTiles * T);
    tile_rows(t, j0 + kPrefetchTiles * T, n_pf, kpf, vpf);
    for (int64_t j = 0; j < n_pf; ++j) prefetch_row(kpf[j], hb);

    // Key vectors past jn are not computed (their scores are set to -inf by the softmax); the
    // last one's lanes past jn read row 0 (finite values, scores discarded).
    for (int64_t j = jn; j < T; ++j) krow[j] = krow[0];
    const int64_t nk = (jn + 7) / 8;
    decode_kt<Rows>(type, krow, nk, hd, stage, kt);
    // Query vectors whose position is >= j0 take part in this tile.
    const int64_t m_begin = std::max<int64_t>(0, j0 - t.pos_first) * G;
    const int64_t m_end = std::max(m_begin, t.end_row(j0) * G);  // windows starting later skip it
    auto first = [&](int64_t m) { return t.first_pos(m / G) - j0; };
    qk_tile(qt, kt, m_begin, m_end, nk, hd, t.scale, s);
    softmax_rows(
        s, m_begin, m_end, first,
        [&](int64_t m) { return std::min(jn, t.pos_first + m / G - j0 + 1); }, mx, l, alpha);

    for (int64_t j = 0; j < jn; ++j) {
      if (j < n_pf) prefetch_row(vpf[j], hb);
      if constexpr (kVInPlace) {
        vrow[j] = vsrc[j];
      } else {
        vrow[j] = reinterpret_cast<const uint8_t*>(decode_row(type, vsrc[j], kt + j * hd, hd));
      }
    }
    // Vectors that see every position of the tile go through the blocked kernel; the others
    // (the diagonal) one at a time with their own end. Same operation sequence either way.
    const int64_t r_full = std::clamp<int64_t>(j0 + jn - 1 - t.pos_first, 0, t.n_rows);
    const int64_t m_full = std::min(m_end, std::max(m_begin, r_full * G));
    for (int64_t m = m_begin; m < m_full; ++m) {
      const int64_t valid = std::min(jn, t.pos_first + m / G - j0 + 1);
      op[0] = o + m * hd;
      pv_rows<VRows, 1>(op, alpha + m, s + m * T, vrow, valid, hd);
    }
    for_blocks<kPvMb>(m_full, m_end, [&](auto mb, int64_t m) {
      constexpr int MB = decltype(mb)::value;
      for (int i = 0; i < MB; ++i) op[i] = o + (m + i) * hd;
      if constexpr (MB == kPvMb) {
        pv_rows<VRows, MB, kPvCb, (kPvMb > kPvCb)>(op, alpha + m, s + m * T, vrow, jn, hd);
      } else {
        pv_rows<VRows, MB>(op, alpha + m, s + m * T, vrow, jn, hd);
      }
    });
  }
  write_outputs(t, st);
}

// The task for one KV type: direct for few query vectors, tile-decoded otherwise.
template <class Rows>
void run_typed(const AttnTask& t) {
  static_assert(kAttnDirectMaxVectors == kMaxMb, "the direct path blocks all its vectors at once");
  if (!direct_task(t)) return run_tiled<Rows>(t);
  return run_direct<Rows>(t);
}

}  // namespace

void attention_task(const AttnTask& t) {
  switch (t.kv->layout.type) {
    case TensorType::F16:
      return run_typed<F16Rows>(t);
    case TensorType::Q8_0:
      return run_typed<Q8Rows>(t);
    case TensorType::Q4_0:
      return run_typed<Q4Rows>(t);
    default:
      return run_typed<F32Rows>(t);
  }
}

}  // namespace hearth::ops::detail::HEARTH_ATTN_NS
