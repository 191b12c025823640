// AVX2 matmul kernels (compiled with -mavx2 -mfma -mf16c; called at SimdLevel::Avx2 and above).
//
// Quantized weights × 8-bit activations use integer dot products: vpmaddubsw (u8 × s8 pairs
// into int16) and vpmaddwd (int16 pairs into int32; Q8_0 widens both sides to int16 and uses
// vpmaddwd alone), so every block's dot product is exact and left as int32 lane partials, which
// are converted to float and accumulated per lane with FMA. F32/F16/BF16 weights are widened
// to f32 and FMA'd with f32 activations.
//
// Register tiles: a tile computes R weight rows × T tokens, loading/unpacking each weight block
// once per tile and each activation block once per tile. Every (row, token) pair performs the
// very same arithmetic on the same lanes whatever R, T, n_tok or the row split are, so results
// are batch invariant by construction: the tile shape only changes what is shared.
//
// On this class of machine (Zen 4 without AVX-512) vpmaddubsw, vpmaddwd, FMA and vmulps share
// the same two pipes, and about three vector instructions retire per cycle; the kernels are
// shaped by that: block scale products are computed 8 blocks per instruction into a small
// table and broadcast from memory, offset/min terms are folded into a block-vectorized
// correction, and the 4-/5-bit formats put two rows in one vector so a single convert + FMA
// serves both.
//
// The kernels read the GGUF block layout as mapped from the file, except Q8_0 / Q4_0 matrices the
// model repacked (ops/packed_rows.h), which have their own kernels (ops/avx2/packed_matmul.h).
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "ops/avx2/kernel_helpers.h"
#include "ops/avx2/packed_matmul.h"
#include "ops/matmul.h"
#include "ops/matmul_kernels.h"
#include "quant/blocks.h"

namespace hearth::ops::mm {
namespace {

// ---------------------------------------------------------------------------------------------
// Kernel context and the generic row/token tiling driver

// Decode (one token) streams each matrix once. Row tiles interleave R rows, which defeats the
// hardware prefetchers on short rows, so the kernels prefetch the row tile kPrefetchTiles ahead
// into L2, sequentially, as fast as they consume the current one (measured: ~0.5 → ~0.85 of
// the sequential-read bandwidth for F16/Q8_0; into L1 it was worse). The K-quant kernels read
// one row at a time, a single sequential stream the hardware prefetcher follows by itself.
constexpr int kPrefetchTiles = 2;

// Tokens [t, t1) of rows [r, r + R) in tiles of T, then the remainder with smaller tiles.
template <class K, int R, int T>
MM_INLINE void token_tiles(const Ctx& c, int64_t r, int64_t t, int64_t t1) {
  for (; t + T <= t1; t += T) K::template tile<R, T>(c, r, t);
  if constexpr (T > 1) token_tiles<K, R, T - 1>(c, r, t, t1);
}

// K: kRD rows per decode tile, kRP × kTP rows × tokens per prefill tile, tile<R, T>(), and
// optionally kTokenPasses > 0: below that many tokens each one passes over a decode tile on its
// own (no small-batch tiles).
template <class K>
constexpr int64_t token_passes() {
  if constexpr (requires { K::kTokenPasses; })
    return K::kTokenPasses;
  else
    return 0;
}

template <class K>
void drive(const Ctx& c, int64_t r0, int64_t r1) {
  const int64_t n_tok = c.x.n_tok;
  constexpr int64_t kPasses = token_passes<K>();
  if (kPasses == 0 && n_tok > 1 && n_tok < K::kTP) {
    // A small batch (concurrent decodes): one register tile holds all its tokens, so each
    // weight block is unpacked once per batch rather than once per token (measured, four
    // tokens, 2 threads: Q6_K 54 → 100 GOPS, Q8_0 54 → 58-70).
    int64_t r = r0;
    for (; r + K::kRP <= r1; r += K::kRP) token_tiles<K, K::kRP, K::kTP>(c, r, 0, n_tok);
    for (; r < r1; ++r) token_tiles<K, 1, K::kTP>(c, r, 0, n_tok);
    return;
  }
  if (n_tok < (kPasses > 0 ? kPasses : K::kTP)) {
    // Decode: a row tile stays in L1 while the tokens pass over it.
    int64_t r = r0;
    for (; r + K::kRD <= r1; r += K::kRD)
      for (int64_t t = 0; t < n_tok; ++t) K::template dec<K::kRD>(c, r, t);
    for (; r < r1; ++r)
      for (int64_t t = 0; t < n_tok; ++t) K::template dec<1>(c, r, t);
    return;
  }
  // Prefill: token blocks whose activations fit in L2 beside the chunk's weights; within a
  // block, register tiles of kRP rows × kTP tokens.
  int64_t tb = static_cast<int64_t>((192 * 1024) / std::max<size_t>(1, c.x.lay.stride));
  tb = std::max<int64_t>(K::kTP, tb / K::kTP * K::kTP);
  for (int64_t t0 = 0; t0 < n_tok; t0 += tb) {
    const int64_t t1 = std::min(n_tok, t0 + tb);
    int64_t r = r0;
    for (; r + K::kRP <= r1; r += K::kRP) token_tiles<K, K::kRP, K::kTP>(c, r, t0, t1);
    for (; r < r1; ++r) token_tiles<K, 1, K::kTP>(c, r, t0, t1);
  }
}

// ---------------------------------------------------------------------------------------------
// 32-element block formats × Q8_0 activations

// Weight formats. Each gives its block size, where its f16 scale (and min) live, the offset
// its unsigned levels carry (I_b = Σ q·a − off·Σa), the registers one block unpacks into, the
// activation registers, and the block dot as eight int32 lane partials (exact).
//
// Q8_0: both sides sign-extended to int16 and multiplied with vpmaddwd, two per block (two
// multiply-pipe operations per pair instead of vpsignb + vpmaddubsw + vpmaddwd). Lane k sums
// elements 2k, 2k+1, 16+2k, 17+2k (per 128-bit half).
struct WQ8_0 {
  static constexpr size_t kBytes = sizeof(BlockQ8_0);
  static constexpr bool kMin = false;
  static constexpr int kOff = 0;
  struct W {
    __m256i lo, hi;
  };
  using A = W;
  static MM_INLINE W widen(const void* p) {
    const auto* q = static_cast<const uint8_t*>(p);
    return {_mm256_cvtepi8_epi16(loadu128(q)), _mm256_cvtepi8_epi16(loadu128(q + 16))};
  }
  static MM_INLINE W load(const uint8_t* b) { return widen(b + 2); }
  static MM_INLINE A act(const int8_t* a) { return widen(a); }
  static MM_INLINE __m256i dot(const W& w, const A& a) {
    return _mm256_add_epi32(_mm256_madd_epi16(w.lo, a.lo), _mm256_madd_epi16(w.hi, a.hi));
  }
};

// 16 packed bytes -> low nibbles (elements 0..15) | high nibbles (elements 16..31).
MM_INLINE __m256i nibbles(const uint8_t* qs) {
  const __m256i x = _mm256_broadcastsi128_si256(loadu128(qs));
  return _mm256_and_si256(_mm256_srlv_epi32(x, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4)),
                          _mm256_set1_epi8(0x0F));
}

[[maybe_unused]] MM_INLINE __m256i nibbles5(const uint8_t* qs, const uint8_t* qh) {
  const __m256i hb = _mm256_and_si256(bits_to_bytes(ld32(qh)), _mm256_set1_epi8(0x10));
  return _mm256_or_si256(nibbles(qs), hb);
}

// The 4-/5-bit formats: unsigned levels (u8) × activations (s8) with vpmaddubsw, pairs summed
// with vpmaddwd; lane k sums elements 4k .. 4k+3. The offset is removed from lane 0.
template <size_t kBytes_, bool kMin_, int kOff_, bool kFive, size_t kQsOff, size_t kQhOff>
struct WUnsigned {
  static constexpr size_t kBytes = kBytes_;
  static constexpr bool kMin = kMin_;
  static constexpr int kOff = kOff_;
  static constexpr bool kFiveBit = kFive;
  static constexpr size_t kQs = kQsOff, kQh = kQhOff;
  struct W {
    __m256i q;
  };
  struct A {
    __m256i a;
  };
  static MM_INLINE W load(const uint8_t* b) {
    if constexpr (kFive)
      return {nibbles5(b + kQsOff, b + kQhOff)};
    else
      return {nibbles(b + kQsOff)};
  }
  static MM_INLINE A act(const int8_t* a) { return {loadu256(a)}; }
  static MM_INLINE __m256i dot(const W& w, const A& a) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(w.q, a.a), ones16());
  }
};

using WQ4_0 = WUnsigned<sizeof(BlockQ4_0), false, 8, false, offsetof(BlockQ4_0, qs), 0>;
using WQ5_0 =
    WUnsigned<sizeof(BlockQ5_0), false, 16, true, offsetof(BlockQ5_0, qs), offsetof(BlockQ5_0, qh)>;
using WQ4_1 = WUnsigned<sizeof(BlockQ4_1), true, 0, false, offsetof(BlockQ4_1, qs), 0>;
using WQ5_1 =
    WUnsigned<sizeof(BlockQ5_1), true, 0, true, offsetof(BlockQ5_1, qs), offsetof(BlockQ5_1, qh)>;

// The f16 scales at byte offset `off` of 8 consecutive blocks (stride kBytes) of one row,
// widened; blocks at or past `n` read as 0.
template <size_t kBytes>
MM_INLINE __m256 row_scales8(const uint8_t* p, size_t off, int n) {
  uint64_t lo = 0, hi = 0;
  if (n >= 8) {
    // vpinsrw straight from memory: 9 instructions for 8 scales (shift/or assembly in general
    // registers took ~3 per scale, a gather was slower still).
    const uint8_t* q = p + off;
    __m128i h = _mm_cvtsi32_si128(ld16(q));
    h = _mm_insert_epi16(h, ld16(q + 1 * kBytes), 1);
    h = _mm_insert_epi16(h, ld16(q + 2 * kBytes), 2);
    h = _mm_insert_epi16(h, ld16(q + 3 * kBytes), 3);
    h = _mm_insert_epi16(h, ld16(q + 4 * kBytes), 4);
    h = _mm_insert_epi16(h, ld16(q + 5 * kBytes), 5);
    h = _mm_insert_epi16(h, ld16(q + 6 * kBytes), 6);
    h = _mm_insert_epi16(h, ld16(q + 7 * kBytes), 7);
    return _mm256_cvtph_ps(h);
  } else {
    for (int k = 0; k < n; ++k) {
      const uint64_t h = ld16(p + k * kBytes + off);
      if (k < 4)
        lo |= h << (16 * k);
      else
        hi |= h << (16 * (k - 4));
    }
  }
  return _mm256_cvtph_ps(_mm_set_epi64x(static_cast<int64_t>(hi), static_cast<int64_t>(lo)));
}

// 8 consecutive floats from p, zeros at or past n.
MM_INLINE __m256 load8_tail(const float* p, int n) {
  if (n >= 8) return _mm256_loadu_ps(p);
  alignas(32) float t[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int k = 0; k < n; ++k) t[k] = p[k];
  return _mm256_load_ps(t);
}

// 8 consecutive int16 block sums from p as floats, zeros at or past n.
MM_INLINE __m256 sums8_tail(const int16_t* p, int n) {
  if (n >= 8) return _mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(loadu128(p)));
  alignas(32) float t[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int k = 0; k < n; ++k) t[k] = static_cast<float>(p[k]);
  return _mm256_load_ps(t);
}

// Per (row i, token j):
//   y = hsum(acc) + hsum(corr),
//   acc  (lane-wise, blocks in order)  += float(P_b lanes) · (dw_b · da_b)
//   corr (lane = b mod 8, groups of 8) += cw_b · (f · da_b · S_b)
// with P_b the exact integer block dot of the stored levels (unsigned for the 4-/5-bit
// formats), S_b = Σ of the activation block, and (cw, f) = (dw, −offset) for Q4_0/Q5_0,
// (mw, 1) for Q4_1/Q5_1 (no corr for Q8_0). The scale products of a chunk of blocks are
// computed 8 blocks per instruction into a table, and the dot pass broadcasts them from
// memory: the multiply pipes are left to the integer products and the accumulating FMA. Every
// tile shape, decode included, runs exactly this arithmetic per pair.
template <class WT, int kRP_, int kTP_>
struct KLegacy {
  static constexpr int kRD = 4, kRP = kRP_, kTP = kTP_;
  static constexpr int kChunk = 64;  // blocks per scale-table pass (a multiple of 8)
  static constexpr bool kCorr = WT::kMin || WT::kOff != 0;
  static constexpr float kF = WT::kMin ? 1.0f : -static_cast<float>(WT::kOff);

  template <int R>
  static void dec(const Ctx& c, int64_t r, int64_t t) {
    tile<R, 1>(c, r, t);
  }

  template <int R, int T>
  __attribute__((noinline)) static void tile(const Ctx& c, int64_t r, int64_t t0) {
    const int64_t nb = c.w.n_cols / 32;
    const uint8_t* wr[R];
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) wr[i] = c.w.row(r + i);
    const TileActs<T> xa(c.x, t0);
    __m256 acc[R][T];
    [[maybe_unused]] __m256 corr[R][T];
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i)
#pragma GCC unroll 8
      for (int j = 0; j < T; ++j) {
        acc[i][j] = _mm256_setzero_ps();
        if constexpr (kCorr) corr[i][j] = _mm256_setzero_ps();
      }
    alignas(32) float sd[R][T][kChunk];
    // Decode streams the matrix: prefetch the row tile after next, sequentially.
    const char* pf = reinterpret_cast<const char*>(wr[0]) + kPrefetchTiles * R * c.w.row_stride;
    constexpr int kLines = static_cast<int>((R * WT::kBytes + 63) / 64);

    for (int64_t b0 = 0; b0 < nb; b0 += kChunk) {
      const int n = static_cast<int>(std::min<int64_t>(kChunk, nb - b0));
      // Scale pass: 8 blocks at a time.
      for (int g = 0; g < n; g += 8) {
        const int ng = n - g;
        __m256 dw8[R];
        [[maybe_unused]] __m256 cw8[R];
#pragma GCC unroll 8
        for (int i = 0; i < R; ++i) {
          const uint8_t* p = wr[i] + (b0 + g) * WT::kBytes;
          dw8[i] = row_scales8<WT::kBytes>(p, 0, ng);
          if constexpr (WT::kMin)
            cw8[i] = row_scales8<WT::kBytes>(p, 2, ng);
          else if constexpr (kCorr)
            cw8[i] = dw8[i];
        }
#pragma GCC unroll 8
        for (int j = 0; j < T; ++j) {
          const __m256 da8 = load8_tail(xa.d[j] + b0 + g, ng);
          [[maybe_unused]] __m256 e8;
          if constexpr (kCorr)
            e8 = _mm256_mul_ps(_mm256_mul_ps(da8, sums8_tail(xa.s[j] + b0 + g, ng)),
                               _mm256_set1_ps(kF));
#pragma GCC unroll 8
          for (int i = 0; i < R; ++i) {
            _mm256_store_ps(&sd[i][j][g], _mm256_mul_ps(dw8[i], da8));
            if constexpr (kCorr) corr[i][j] = _mm256_fmadd_ps(cw8[i], e8, corr[i][j]);
          }
        }
      }
      // Dot pass.
      for (int k = 0; k < n; ++k) {
        const int64_t b = b0 + k;
        if constexpr (T < kTP) {  // decode and small batches stream the matrix
#pragma GCC unroll 8
          for (int l = 0; l < kLines; ++l) _mm_prefetch(pf + 64 * l, _MM_HINT_T1);
          pf += R * WT::kBytes;
        }
        typename WT::W wv[R];
#pragma GCC unroll 8
        for (int i = 0; i < R; ++i) wv[i] = WT::load(wr[i] + b * WT::kBytes);
#pragma GCC unroll 8
        for (int j = 0; j < T; ++j) {
          const typename WT::A av = WT::act(xa.q[j] + 32 * b);
#pragma GCC unroll 8
          for (int i = 0; i < R; ++i) {
            const __m256 p = _mm256_cvtepi32_ps(WT::dot(wv[i], av));
            acc[i][j] = _mm256_fmadd_ps(p, _mm256_broadcast_ss(&sd[i][j][k]), acc[i][j]);
          }
        }
      }
    }
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i)
#pragma GCC unroll 8
      for (int j = 0; j < T; ++j) {
        float v = hsum(acc[i][j]);
        if constexpr (kCorr) v += hsum(corr[i][j]);
        c.y[(t0 + j) * c.ys + r + i] = v;
      }
  }
};

// The 4-/5-bit formats with two rows per vector. A pair of rows (i, i') holds
//   lo = [q_i[0..15] | q_i'[0..15]],  hi = [q_i[16..31] | q_i'[16..31]]
// and the activation halves are broadcast to both 128-bit lanes, so one vpmaddubsw per half
// covers both rows; the two halves' int16 pair sums are added (|.| <= 2·31·127·2 < 2^15) before
// a single vpmaddwd, and one convert + FMA then serves both rows with the scale vector
// (s_i ×4 | s_i' ×4). Row i's four int32 lanes k sum elements 4k..4k+3 and 16+4k..19+4k; its
// float lanes accumulate per block in order and reduce as (l0+l2)+(l1+l3). Nothing crosses the
// 128-bit halves, so a row's result is the same in either half and whatever its partner (an
// odd last row is paired with itself): batch and split invariant. Offsets / mins enter
// through the block-vectorized correction of KLegacy.
template <class WT, int kRP_, int kTP_>
struct KPaired {
  static_assert(kRP_ % 2 == 0);
  static constexpr int kRD = 4, kRP = kRP_, kTP = kTP_;
  static constexpr int kChunk = 64;
  static constexpr bool kCorr = WT::kMin || WT::kOff != 0;
  static constexpr float kF = WT::kMin ? 1.0f : -static_cast<float>(WT::kOff);

  template <int R>
  static void dec(const Ctx& c, int64_t r, int64_t t) {
    tile<R, 1>(c, r, t);
  }

  // The lo / hi vectors of block b for rows a (low lane) and b2 (high lane).
  static MM_INLINE void unpack(const uint8_t* ra, const uint8_t* rb, __m256i& lo, __m256i& hi) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256i x = _mm256_inserti128_si256(_mm256_castsi128_si256(loadu128(ra + WT::kQs)),
                                              loadu128(rb + WT::kQs), 1);
    lo = _mm256_and_si256(x, m4);
    hi = _mm256_and_si256(_mm256_srli_epi16(x, 4), m4);
    if constexpr (WT::kFiveBit) {
      const __m256i b4 = _mm256_set1_epi8(0x10);
      const __m256i ha = bits_to_bytes(ld32(ra + WT::kQh)), hb = bits_to_bytes(ld32(rb + WT::kQh));
      lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_permute2x128_si256(ha, hb, 0x20), b4));
      hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_permute2x128_si256(ha, hb, 0x31), b4));
    }
  }

  template <int R, int T>
  __attribute__((noinline)) static void tile(const Ctx& c, int64_t r, int64_t t0) {
    constexpr int P = (R + 1) / 2;
    const int64_t nb = c.w.n_cols / 32;
    const uint8_t* wr[2 * P];
#pragma GCC unroll 8
    for (int i = 0; i < 2 * P; ++i) wr[i] = c.w.row(r + (i < R ? i : R - 1));
    const TileActs<T> xa(c.x, t0);
    __m256 acc[P][T];
    [[maybe_unused]] __m256 corr[R][T];
#pragma GCC unroll 8
    for (int p = 0; p < P; ++p)
#pragma GCC unroll 8
      for (int j = 0; j < T; ++j) acc[p][j] = _mm256_setzero_ps();
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i)
#pragma GCC unroll 8
      for (int j = 0; j < T; ++j)
        if constexpr (kCorr) corr[i][j] = _mm256_setzero_ps();
    alignas(32) float sd[2 * P][T][kChunk];
    const char* pf = reinterpret_cast<const char*>(wr[0]) + kPrefetchTiles * R * c.w.row_stride;
    constexpr int kLines = static_cast<int>((R * WT::kBytes + 63) / 64);

    for (int64_t b0 = 0; b0 < nb; b0 += kChunk) {
      const int n = static_cast<int>(std::min<int64_t>(kChunk, nb - b0));
      for (int g = 0; g < n; g += 8) {
        const int ng = n - g;
        __m256 dw8[R];
        [[maybe_unused]] __m256 cw8[R];
#pragma GCC unroll 8
        for (int i = 0; i < R; ++i) {
          const uint8_t* q = wr[i] + (b0 + g) * WT::kBytes;
          dw8[i] = row_scales8<WT::kBytes>(q, 0, ng);
          if constexpr (WT::kMin)
            cw8[i] = row_scales8<WT::kBytes>(q, 2, ng);
          else if constexpr (kCorr)
            cw8[i] = dw8[i];
        }
#pragma GCC unroll 8
        for (int j = 0; j < T; ++j) {
          const __m256 da8 = load8_tail(xa.d[j] + b0 + g, ng);
          [[maybe_unused]] __m256 e8;
          if constexpr (kCorr)
            e8 = _mm256_mul_ps(_mm256_mul_ps(da8, sums8_tail(xa.s[j] + b0 + g, ng)),
                               _mm256_set1_ps(kF));
#pragma GCC unroll 8
          for (int i = 0; i < 2 * P; ++i) {
            const int ii = i < R ? i : R - 1;
            _mm256_store_ps(&sd[i][j][g], _mm256_mul_ps(dw8[ii], da8));
            if constexpr (kCorr)
              if (i < R) corr[i][j] = _mm256_fmadd_ps(cw8[i], e8, corr[i][j]);
          }
        }
      }
      for (int k = 0; k < n; ++k) {
        const int64_t b = b0 + k;
        if constexpr (T < kTP) {  // decode and small batches stream the matrix
#pragma GCC unroll 8
          for (int l = 0; l < kLines; ++l) _mm_prefetch(pf + 64 * l, _MM_HINT_T1);
          pf += R * WT::kBytes;
        }
        __m256i lo[P], hi[P];
#pragma GCC unroll 8
        for (int p = 0; p < P; ++p)
          unpack(wr[2 * p] + b * WT::kBytes, wr[2 * p + 1] + b * WT::kBytes, lo[p], hi[p]);
#pragma GCC unroll 8
        for (int j = 0; j < T; ++j) {
          const int8_t* a = xa.q[j] + 32 * b;
          const __m256i alo = _mm256_broadcastsi128_si256(loadu128(a));
          const __m256i ahi = _mm256_broadcastsi128_si256(loadu128(a + 16));
#pragma GCC unroll 8
          for (int p = 0; p < P; ++p) {
            const __m256i p16 = _mm256_add_epi16(_mm256_maddubs_epi16(lo[p], alo),
                                                 _mm256_maddubs_epi16(hi[p], ahi));
            const __m256 v = _mm256_cvtepi32_ps(_mm256_madd_epi16(p16, ones16()));
            const __m256 sc = _mm256_set_m128(_mm_broadcast_ss(&sd[2 * p + 1][j][k]),
                                              _mm_broadcast_ss(&sd[2 * p][j][k]));
            acc[p][j] = _mm256_fmadd_ps(v, sc, acc[p][j]);
          }
        }
      }
    }
#pragma GCC unroll 8
    for (int p = 0; p < P; ++p)
#pragma GCC unroll 8
      for (int j = 0; j < T; ++j)
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
          const int i = 2 * p + h;
          if (i >= R) continue;
          const __m128 v =
              h == 0 ? _mm256_castps256_ps128(acc[p][j]) : _mm256_extractf128_ps(acc[p][j], 1);
          const __m128 s2 = _mm_add_ps(v, _mm_movehl_ps(v, v));
          float y = _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
          if constexpr (kCorr) y += hsum(corr[i][j]);
          c.y[(t0 + j) * c.ys + r + i] = y;
        }
  }
};

// ---------------------------------------------------------------------------------------------
// K-quants × Q8_K activations: one weight row per tile, its super-block unpacked once into
// registers and applied to T tokens. Sub-block scales enter the integer sum through vpmaddwd.

MM_INLINE __m256i bcast_word(__m256i v, int k) {  // int16 word k of each 128-bit lane
  return _mm256_shuffle_epi8(v, _mm256_set1_epi16(static_cast<short>(0x0100 + 0x0202 * k)));
}

// Q4_K/Q5_K: the 8 six-bit scales and 8 mins from the 12 packed bytes at p, as bytes
// sc0..sc7, m0..m7 (reads 16 bytes): sc0-3 / m0-3 are the low 6 bits of bytes 0-3 / 4-7;
// sc4-7 / m4-7 the low / high nibbles of bytes 8-11 plus the top two bits of bytes 0-3 / 4-7.
MM_INLINE __m128i kquant_scales_mins(const uint8_t* p) {
  const __m128i x = loadu128(p);
  const __m128i a =
      _mm_shuffle_epi8(x, _mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11));
  const __m128i b =
      _mm_shuffle_epi8(x, _mm_setr_epi8(-1, -1, -1, -1, 0, 1, 2, 3, -1, -1, -1, -1, 4, 5, 6, 7));
  const __m128i a2 = _mm_blend_epi16(a, _mm_srli_epi16(a, 4), 0xC0);  // bytes 12-15: >> 4
  const __m128i lo = _mm_and_si128(
      a2, _mm_setr_epi8(63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 15, 15, 15, 15));
  const __m128i hi = _mm_and_si128(
      _mm_srli_epi16(b, 2), _mm_setr_epi8(0, 0, 0, 0, 48, 48, 48, 48, 0, 0, 0, 0, 48, 48, 48, 48));
  return _mm_or_si128(lo, hi);
}

template <bool kQ5>
struct KQ45K {
  static constexpr size_t kBytes = kQ5 ? sizeof(BlockQ5_K) : sizeof(BlockQ4_K);
  static constexpr size_t kQsOff = kQ5 ? offsetof(BlockQ5_K, qs) : offsetof(BlockQ4_K, qs);
  static constexpr int kRD = 1, kRP = 1, kTP = 4;

  template <int R>
  static void dec(const Ctx& c, int64_t r, int64_t t) {
    tile<R, 1>(c, r, t);
  }

  template <int R, int T>
  __attribute__((noinline)) static void tile(const Ctx& c, int64_t r, int64_t t0) {
    static_assert(R == 1);
    const int64_t nsb = c.w.n_cols / 256;
    const uint8_t* row = c.w.row(r);
    const TileActs<T> xa(c.x, t0);
    __m256 acc[T];
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) acc[j] = _mm256_setzero_ps();
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    for (int64_t s = 0; s < nsb; ++s) {
      const uint8_t* blk = row + s * kBytes;
      const __m256i sm16 = _mm256_cvtepu8_epi16(kquant_scales_mins(blk + 4));
      const __m256i sc = _mm256_permute2x128_si256(sm16, sm16, 0x00);  // sc0..7 | sc0..7
      const __m128i mn = _mm256_extracti128_si256(sm16, 1);
      const __m256i mins = _mm256_set_m128i(_mm_unpackhi_epi16(mn, mn), _mm_unpacklo_epi16(mn, mn));
      const __m128 dd = _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(ld32(blk))));
      const __m256 d = _mm256_broadcastss_ps(dd);
      const __m256 dmin = _mm256_broadcastss_ps(_mm_movehdup_ps(dd));
      [[maybe_unused]] __m256i qh;
      if constexpr (kQ5) qh = loadu256(blk + offsetof(BlockQ5_K, qh));

      __m256i isum[T];
#pragma GCC unroll 8
      for (int j = 0; j < T; ++j) isum[j] = _mm256_setzero_si256();
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) {
        const __m256i raw = loadu256(blk + kQsOff + 32 * q);
        __m256i lo = _mm256_and_si256(raw, m4);
        __m256i hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
        if constexpr (kQ5) {
          const __m256i b4 = _mm256_set1_epi8(0x10);
          lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_slli_epi16(qh, 4), b4));
          hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_slli_epi16(qh, 3), b4));
          qh = _mm256_srli_epi16(qh, 2);
        }
        const __m256i s_lo = bcast_word(sc, 2 * q), s_hi = bcast_word(sc, 2 * q + 1);
#pragma GCC unroll 8
        for (int j = 0; j < T; ++j) {
          const int8_t* a = xa.q[j] + 256 * s + 64 * q;
          const __m256i p_lo = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, loadu256(a)), s_lo);
          const __m256i p_hi = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, loadu256(a + 32)), s_hi);
          isum[j] = _mm256_add_epi32(isum[j], _mm256_add_epi32(p_lo, p_hi));
          opaque(isum[j]);
        }
      }
#pragma GCC unroll 8
      for (int j = 0; j < T; ++j) {
        const __m256i imin = _mm256_madd_epi16(loadu256(xa.s[j] + 16 * s), mins);
        const __m256 da = _mm256_broadcast_ss(xa.d[j] + s);
        acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[j]), _mm256_mul_ps(d, da), acc[j]);
        acc[j] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(imin), _mm256_mul_ps(dmin, da), acc[j]);
      }
    }
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) c.y[(t0 + j) * c.ys + r] = hsum(acc[j]);
  }
};

struct KQ6K {
  static constexpr int kRD = 1, kRP = 1, kTP = 8;

  template <int R>
  static void dec(const Ctx& c, int64_t r, int64_t t) {
    tile<R, 1>(c, r, t);
  }

  template <int R, int T>
  __attribute__((noinline)) static void tile(const Ctx& c, int64_t r, int64_t t0) {
    static_assert(R == 1);
    const int64_t nsb = c.w.n_cols / 256;
    const uint8_t* row = c.w.row(r);
    const TileActs<T> xa(c.x, t0);
    __m256 acc[T];
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) acc[j] = _mm256_setzero_ps();
    const __m256i m4 = _mm256_set1_epi8(0x0F), m30 = _mm256_set1_epi8(0x30);
    for (int64_t s = 0; s < nsb; ++s) {
      const uint8_t* blk = row + s * sizeof(BlockQ6_K);
      const __m256i sc16 = _mm256_cvtepi8_epi16(loadu128(blk + offsetof(BlockQ6_K, scales)));
      const __m256 d = _mm256_set1_ps(h2f(ld16(blk + offsetof(BlockQ6_K, d))));
      __m256i isum[T];
#pragma GCC unroll 8
      for (int j = 0; j < T; ++j) isum[j] = _mm256_setzero_si256();
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const uint8_t* ql = blk + 64 * h;
        const __m256i l0 = loadu256(ql), l1 = loadu256(ql + 32);
        const __m256i hb = loadu256(blk + offsetof(BlockQ6_K, qh) + 32 * h);
        // Scales s_{8h} .. s_{8h+7} in both lanes.
        const __m256i sc = h == 0 ? _mm256_permute2x128_si256(sc16, sc16, 0x00)
                                  : _mm256_permute2x128_si256(sc16, sc16, 0x11);
        __m256i v[4];
        v[0] = _mm256_or_si256(_mm256_and_si256(l0, m4),
                               _mm256_and_si256(_mm256_slli_epi16(hb, 4), m30));
        v[1] = _mm256_or_si256(_mm256_and_si256(l1, m4),
                               _mm256_and_si256(_mm256_slli_epi16(hb, 2), m30));
        v[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                               _mm256_and_si256(hb, m30));
        v[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                               _mm256_and_si256(_mm256_srli_epi16(hb, 2), m30));
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
          // 32 elements = groups 8h+2k (low lane) and 8h+2k+1 (high lane).
          const __m256i sv = _mm256_shuffle_epi8(
              sc, _mm256_setr_epi8(static_cast<char>(4 * k), static_cast<char>(4 * k + 1),
                                   static_cast<char>(4 * k), static_cast<char>(4 * k + 1),
                                   static_cast<char>(4 * k), static_cast<char>(4 * k + 1),
                                   static_cast<char>(4 * k), static_cast<char>(4 * k + 1),
                                   static_cast<char>(4 * k), static_cast<char>(4 * k + 1),
                                   static_cast<char>(4 * k), static_cast<char>(4 * k + 1),
                                   static_cast<char>(4 * k), static_cast<char>(4 * k + 1),
                                   static_cast<char>(4 * k), static_cast<char>(4 * k + 1),
                                   static_cast<char>(4 * k + 2), static_cast<char>(4 * k + 3),
                                   static_cast<char>(4 * k + 2), static_cast<char>(4 * k + 3),
                                   static_cast<char>(4 * k + 2), static_cast<char>(4 * k + 3),
                                   static_cast<char>(4 * k + 2), static_cast<char>(4 * k + 3),
                                   static_cast<char>(4 * k + 2), static_cast<char>(4 * k + 3),
                                   static_cast<char>(4 * k + 2), static_cast<char>(4 * k + 3),
                                   static_cast<char>(4 * k + 2), static_cast<char>(4 * k + 3),
                                   static_cast<char>(4 * k + 2), static_cast<char>(4 * k + 3)));
#pragma GCC unroll 8
          for (int j = 0; j < T; ++j) {
            const int8_t* a = xa.q[j] + 256 * s + 128 * h + 32 * k;
            isum[j] = _mm256_add_epi32(
                isum[j], _mm256_madd_epi16(_mm256_maddubs_epi16(v[k], loadu256(a)), sv));
            opaque(isum[j]);
          }
        }
      }
#pragma GCC unroll 8
      for (int j = 0; j < T; ++j) {
        // q is stored as q + 32: subtract 32 · Σ_k sc_k · bsum_k.
        const __m256i corr =
            _mm256_slli_epi32(_mm256_madd_epi16(loadu256(xa.s[j] + 16 * s), sc16), 5);
        const __m256 da = _mm256_broadcast_ss(xa.d[j] + s);
        acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(isum[j], corr)),
                                 _mm256_mul_ps(d, da), acc[j]);
      }
    }
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) c.y[(t0 + j) * c.ys + r] = hsum(acc[j]);
  }
};

// ---------------------------------------------------------------------------------------------
// F32 / F16 / BF16 weights × f32 activations

// kPacked: F16 / BF16 rows packed in groups of 8 (ops/packed_rows.h). A decode tile is then a
// whole group, one sequential stream of 128 bytes per step, where the file's rows are R
// interleaved streams. Each (row, token) result is the same chain of FMAs on either layout.
template <TensorType WT, bool kPacked = false>
struct KFloat {
  // Packed: decode tiles are whole groups (one stream), and up to 4 tokens pass over each group
  // one at a time (after the first pass it is in L1/L2), where tiles of several tokens would
  // take fewer than 8 rows and read the group as strided streams (measured, AVX-512 level before
  // FloatPairs took these: 2 / 3 concurrent Qwen3-0.6B F16 streams 44 / 45 tok/s aggregate with
  // 3-row tiles). Prefill tiles take half groups (4 rows: one cache line of each 128-byte
  // chunk) × 3 tokens.
  static constexpr int kRD = kPacked ? 8 : 4, kRP = kPacked ? 4 : 3, kTP = kPacked ? 3 : 4;
  static constexpr int kTokenPasses = kPacked ? 5 : 0;
  static constexpr size_t kElem = WT == TensorType::F32 ? 4 : 2;
  using Rows = FloatRows<kElem, kPacked>;

  static MM_INLINE __m256 load8(const uint8_t* p) {
    if constexpr (WT == TensorType::F32) {
      return _mm256_loadu_ps(reinterpret_cast<const float*>(p));
    } else if constexpr (WT == TensorType::F16) {
      return _mm256_cvtph_ps(loadu128(p));
    } else {
      return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(loadu128(p)), 16));
    }
  }

  template <int R>
  static void dec(const Ctx& c, int64_t r, int64_t t) {
    tile<R, 1>(c, r, t);
  }

  template <int R, int T>
  __attribute__((noinline)) static void tile(const Ctx& c, int64_t r, int64_t t0) {
    const int64_t n = c.w.n_cols, n8 = n / 8 * 8;
    const uint8_t* wr[R];
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) wr[i] = Rows::base(c.w, r + i);
    const float* xr[T];
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) xr[j] = c.x.f32(t0 + j);
    __m256 acc[R][T];
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i)
      for (int j = 0; j < T; ++j) acc[i][j] = _mm256_setzero_ps();
    // Decode and small batches stream the matrix: prefetch the row tile after next,
    // sequentially. Packed groups are one stream: a one-token decode leaves it to the hardware
    // prefetcher (measured, Qwen3-0.6B F16, 2 threads, tg64: 37 tok/s with the row-tile
    // prefetch, 48 without), a batch prefetches it ahead (its tiles, and each token's pass of
    // the per-token passes; measured at this level, 2 threads, 3072x1024 F16 from memory,
    // GOPS: 2 tokens 60 -> 65, 4 tokens 85 -> 95, 6 tokens 91 -> 119).
    constexpr bool kPrefetch = T < kTP && !kPacked;
    const bool prefetch_group = kPacked && c.x.n_tok > 1;
    constexpr int kGroupLines = R == 8 ? 2 : 1;  // a whole group or a half (rows 0-3 or 4-7)
    const char* pf = reinterpret_cast<const char*>(wr[0]) + kPrefetchTiles * R * c.w.row_stride;
    constexpr int kLines = static_cast<int>((R * 8 * kElem + 63) / 64);
    for (int64_t k = 0; k < n8; k += 8) {
      const size_t at = static_cast<size_t>(k / 8) * Rows::kChunk;
      if constexpr (kPrefetch) {
#pragma GCC unroll 8
        for (int l = 0; l < kLines; ++l) _mm_prefetch(pf + 64 * l, _MM_HINT_T1);
        pf += R * 8 * kElem;
      }
      if constexpr (kPacked)
        if (prefetch_group) Rows::prefetch_ahead(wr[0] + at, kGroupLines);
      if constexpr (T == 1 || kPacked) {
        // Each row's weights straight into its FMAs: R rows' loaded vectors beside the
        // accumulators would not fit in 16 registers (the packed BF16 decode tile spilled an
        // accumulator, a store and reload in its chain every step).
#pragma GCC unroll 8
        for (int i = 0; i < R; ++i) {
          const __m256 wv = load8(wr[i] + at);
#pragma GCC unroll 8
          for (int j = 0; j < T; ++j)
            acc[i][j] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(xr[j] + k), acc[i][j]);
        }
      } else {
        __m256 wv[R];
#pragma GCC unroll 8
        for (int i = 0; i < R; ++i) wv[i] = load8(wr[i] + at);
#pragma GCC unroll 8
        for (int j = 0; j < T; ++j) {
          const __m256 xv = _mm256_loadu_ps(xr[j] + k);
#pragma GCC unroll 8
          for (int i = 0; i < R; ++i) acc[i][j] = _mm256_fmadd_ps(wv[i], xv, acc[i][j]);
        }
      }
    }
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i)
      for (int j = 0; j < T; ++j) {
        float s = hsum(acc[i][j]);
        for (int64_t k = n8; k < n; ++k)  // the file's rows only (packed: n8 == n)
          s = std::fma(float_weight<WT>(wr[i] + k * kElem), xr[j][k], s);
        c.y[(t0 + j) * c.ys + r + i] = s;
      }
  }
};

// ---------------------------------------------------------------------------------------------
// Activation quantizers (bit-identical to quant/quantize_row's Q8_0 and Q8_K)

MM_INLINE __m256 abs_ps(__m256 v) {
  return _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)));
}

MM_INLINE float hmax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

// quant_int(v * id, -127, 127) for 8 values: NaN clamps to -127 (vmaxps returns its second
// operand for NaN), the rest round half to even.
MM_INLINE __m256i quant8(__m256 v, __m256 id) {
  __m256 q = _mm256_mul_ps(v, id);
  q = _mm256_max_ps(q, _mm256_set1_ps(-127.0f));
  q = _mm256_min_ps(q, _mm256_set1_ps(127.0f));
  return _mm256_cvtps_epi32(q);
}

// 32 int32 (4 vectors) -> 32 int8 in order.
MM_INLINE __m256i pack32(__m256i i0, __m256i i1, __m256i i2, __m256i i3) {
  const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
  return _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// Eight blocks' f16 scales at once: quant's scale_to_f16_up on each lane of d (d >= 0), as f16
// bits. Branch-free: a per-block round-up test mispredicts about every other block, and the
// chain (hmax, divide, convert and back, divide) then runs one block at a time.
MM_INLINE __m128i scales_to_f16_up(__m256 d) {
  const __m128i h =
      _mm256_cvtps_ph(_mm256_min_ps(d, _mm256_set1_ps(65504.0f)), _MM_FROUND_TO_NEAREST_INT);
  const __m256 lost = _mm256_cmp_ps(_mm256_cvtph_ps(h), d, _CMP_LT_OQ);
  const __m128i lost16 = _mm_packs_epi32(_mm256_castsi256_si128(_mm256_castps_si256(lost)),
                                         _mm256_extracti128_si256(_mm256_castps_si256(lost), 1));
  const __m128i below_max =
      _mm_cmplt_epi16(_mm_and_si128(h, _mm_set1_epi16(0x7fff)), _mm_set1_epi16(0x7bff));
  return _mm_sub_epi16(h, _mm_and_si128(lost16, below_max));  // +1 where both hold
}

// One block's 32 values, its amax and, once the scale is known, its quants and their sum.
struct Q8Block {
  __m256 v0, v1, v2, v3;
  void load(const float* p) {
    v0 = _mm256_loadu_ps(p);
    v1 = _mm256_loadu_ps(p + 8);
    v2 = _mm256_loadu_ps(p + 16);
    v3 = _mm256_loadu_ps(p + 24);
  }
  float amax() const {  // vmaxps returns its second operand for NaN: NaNs are skipped
    __m256 m = _mm256_max_ps(abs_ps(v0), _mm256_setzero_ps());
    m = _mm256_max_ps(abs_ps(v1), m);
    m = _mm256_max_ps(abs_ps(v2), m);
    m = _mm256_max_ps(abs_ps(v3), m);
    return hmax(m);
  }
  void store(__m256 id, int8_t* qs, int16_t* sum) const {
    const __m256i i0 = quant8(v0, id), i1 = quant8(v1, id), i2 = quant8(v2, id),
                  i3 = quant8(v3, id);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs), pack32(i0, i1, i2, i3));
    *sum = static_cast<int16_t>(
        hsum_i32(_mm256_add_epi32(_mm256_add_epi32(i0, i1), _mm256_add_epi32(i2, i3))));
  }
};

// Blocks [b0, b0 + n), n <= 8: amaxes, then their scales as one vector (unused lanes: 0).
MM_INLINE void quantize_q8_0_blocks(const float* x, int64_t b0, int n, int8_t* qs, float* d,
                                    int16_t* sums) {
  alignas(32) float amax[8] = {};
  for (int k = 0; k < n; ++k) {
    Q8Block blk;
    blk.load(x + 32 * (b0 + k));
    amax[k] = blk.amax();
  }
  const __m256 dq = _mm256_cvtph_ps(
      scales_to_f16_up(_mm256_div_ps(_mm256_load_ps(amax), _mm256_set1_ps(127.0f))));
  const __m256 nonzero = _mm256_cmp_ps(dq, _mm256_setzero_ps(), _CMP_NEQ_OQ);
  const __m256i lanes =
      _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  _mm256_maskstore_ps(d + b0, lanes, dq);
  alignas(32) float id[8];
  _mm256_store_ps(id, _mm256_and_ps(_mm256_div_ps(_mm256_set1_ps(1.0f), dq), nonzero));
  for (int k = 0; k < n; ++k) {
    Q8Block blk;
    blk.load(x + 32 * (b0 + k));
    blk.store(_mm256_set1_ps(id[k]), qs + 32 * (b0 + k), sums + b0 + k);
  }
}

void quantize_q8_0_row(const float* x, int64_t n, int8_t* qs, float* d, int16_t* sums) {
  const int64_t nb = n / 32;
  int64_t b = 0;
  for (; b + 8 <= nb; b += 8) quantize_q8_0_blocks(x, b, 8, qs, d, sums);  // unrolled: n constant
  if (b < nb) quantize_q8_0_blocks(x, b, static_cast<int>(nb - b), qs, d, sums);
}

void quantize_q8_k_row(const float* x, int64_t n, int8_t* qs, float* d, int16_t* bsums) {
  for (int64_t b = 0; b < n / 256; ++b) {
    const float* p = x + 256 * b;
    __m256 m = _mm256_setzero_ps();
    for (int k = 0; k < 32; ++k) m = _mm256_max_ps(abs_ps(_mm256_loadu_ps(p + 8 * k)), m);
    const float amax = hmax(m);
    int8_t* q = qs + 256 * b;
    int16_t* bs = bsums + 16 * b;
    if (amax == 0.0f) {  // also all-NaN blocks, as the reference
      std::memset(q, 0, 256);
      std::memset(bs, 0, 32);
      d[b] = 0.0f;
      continue;
    }
    // The first element of largest magnitude, sign kept.
    const __m256 am = _mm256_set1_ps(amax);
    float mx = 0.0f;
    for (int k = 0; k < 32; ++k) {
      const __m256 v = _mm256_loadu_ps(p + 8 * k);
      const int mask = _mm256_movemask_ps(_mm256_cmp_ps(abs_ps(v), am, _CMP_EQ_OQ));
      if (mask != 0) {
        mx = p[8 * k + __builtin_ctz(static_cast<unsigned>(mask))];
        break;
      }
    }
    const float iscale = -127.0f / mx;
    const __m256 is = _mm256_set1_ps(iscale);
    for (int k = 0; k < 8; ++k) {
      const float* pk = p + 32 * k;
      const __m256i i0 = quant8(_mm256_loadu_ps(pk), is), i1 = quant8(_mm256_loadu_ps(pk + 8), is),
                    i2 = quant8(_mm256_loadu_ps(pk + 16), is),
                    i3 = quant8(_mm256_loadu_ps(pk + 24), is);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 32 * k), pack32(i0, i1, i2, i3));
      bs[2 * k] = static_cast<int16_t>(hsum_i32(_mm256_add_epi32(i0, i1)));
      bs[2 * k + 1] = static_cast<int16_t>(hsum_i32(_mm256_add_epi32(i2, i3)));
    }
    d[b] = 1.0f / iscale;
  }
}

}  // namespace

void quantize_rows_avx2(TensorType act_type, const float* x, int64_t n_tok, int64_t n_cols,
                        uint8_t* out, const ActLayout& lay) {
  for (int64_t t = 0; t < n_tok; ++t) {
    const float* src = x + t * n_cols;
    uint8_t* row = out + static_cast<size_t>(t) * lay.stride;
    auto* qs = reinterpret_cast<int8_t*>(row);
    auto* d = reinterpret_cast<float*>(row + lay.d_off);
    auto* sums = reinterpret_cast<int16_t*>(row + lay.sum_off);
    size_t used = 0;
    if (act_type == TensorType::F32) {
      std::memcpy(row, src, static_cast<size_t>(n_cols) * 4);
      used = static_cast<size_t>(n_cols) * 4;
    } else if (act_type == TensorType::Q8_0) {
      quantize_q8_0_row(src, n_cols, qs, d, sums);
      used = lay.sum_off + static_cast<size_t>(n_cols / 32) * 2;
    } else {
      quantize_q8_k_row(src, n_cols, qs, d, sums);
      used = lay.sum_off + static_cast<size_t>(n_cols / 16) * 2;
    }
    std::memset(row + used, 0, lay.stride - used);
  }
}

// Every format the matmul layer supports has an AVX2 kernel; keep one list (ops::matmul_supported).
bool avx2_has_kernel(TensorType w) {
  return matmul_supported(w);
}

#ifndef LEG_Q8_0
#define LEG_Q8_0 2, 5
#define LEG_Q4_0 4, 4
#define LEG_Q4_1 4, 4
#define LEG_Q5_0 4, 4
#define LEG_Q5_1 4, 4
#endif
bool rows_avx2(const MatrixView& w, const Acts& x, float* y, int64_t y_stride, int64_t r0,
               int64_t r1) {
  const Ctx c{w, x, y, y_stride};
  switch (w.type) {
    case TensorType::F32:
      drive<KFloat<TensorType::F32>>(c, r0, r1);
      return true;
    case TensorType::F16:
      if (w.packed)
        drive<KFloat<TensorType::F16, true>>(c, r0, r1);
      else
        drive<KFloat<TensorType::F16>>(c, r0, r1);
      return true;
    case TensorType::BF16:
      if (w.packed)
        drive<KFloat<TensorType::BF16, true>>(c, r0, r1);
      else
        drive<KFloat<TensorType::BF16>>(c, r0, r1);
      return true;
    case TensorType::Q8_0:
      if (w.packed)
        drive_packed<PQ8<DotAvx2>>(c, r0, r1);
      else
        drive<KLegacy<WQ8_0, LEG_Q8_0>>(c, r0, r1);
      return true;
    case TensorType::Q4_0:
      if (w.packed)
        drive_packed<PQ4<DotAvx2>>(c, r0, r1);
      else
        drive<KPaired<WQ4_0, LEG_Q4_0>>(c, r0, r1);
      return true;
    case TensorType::Q4_1:
      drive<KPaired<WQ4_1, LEG_Q4_1>>(c, r0, r1);
      return true;
    case TensorType::Q5_0:
      if (w.packed)
        drive_packed<PQ5<DotAvx2>>(c, r0, r1);
      else
        drive<KPaired<WQ5_0, LEG_Q5_0>>(c, r0, r1);
      return true;
    case TensorType::Q5_1:
      drive<KPaired<WQ5_1, LEG_Q5_1>>(c, r0, r1);
      return true;
    case TensorType::Q4_K:
      if (w.packed)
        drive_packed<PQ4K<DotAvx2>>(c, r0, r1);
      else
        drive<KQ45K<false>>(c, r0, r1);
      return true;
    case TensorType::Q5_K:
      drive<KQ45K<true>>(c, r0, r1);
      return true;
    case TensorType::Q6_K:
      if (w.packed)
        drive_packed<PQ6K<DotAvx2>>(c, r0, r1);
      else
        drive<KQ6K>(c, r0, r1);
      return true;
    default:
      return false;
  }
}

}  // namespace hearth::ops::mm
