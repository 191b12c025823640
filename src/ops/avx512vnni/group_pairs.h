// Internal to ops/avx512vnni/matmul_avx512vnni.cpp: the packed kernels over two groups of 8 rows
// at once, on 512-bit vectors. The packed layout (ops/packed_rows.h) is unchanged: step k of
// group g fills lanes 0-7 of a vector and step k of group g + 1 lanes 8-15, so each 32-bit lane
// is one row, as in the 8-row kernels, and a token's 4 activation bytes of that step go to every
// lane by vpdpbusd's embedded broadcast. Against the 8-row kernels on 512-bit vectors, which put
// two steps in the halves, a token's step then costs one instruction instead of three (no
// permute of the activation bytes, no sign fix-up, no sum of halves).
//
// vpdpbusd multiplies unsigned by signed bytes and the broadcast operand is the signed one, so
// Q8_0's weights are read as w + 128 (an xor, shared by the tile's tokens) and
//   I_b = Σ (w + 128)·a − 128·S_b,
// with S_b the activation block's sum: the same exact int32 I_b as PQ8's, so every float after
// it, and the result, is bit-identical to the other kernels'. Q4_0 and Q4_K already take levels
// 0..15 and subtract 8·S_b / the mins' term.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "ops/avx2/kernel_helpers.h"

namespace hearth::ops::mm {
namespace {

// 32 bytes of group g (lanes 0-7) and 32 of group g + 1 (lanes 8-15).
MM_INLINE __m512i pair_load(const uint8_t* p0, const uint8_t* p1) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(loadu256(p0)), loadu256(p1), 1);
}

// The two groups' 8 f16 scales at p0 and p1, as 16 floats.
MM_INLINE __m512 pair_scales(const uint8_t* p0, const uint8_t* p1) {
  return _mm512_cvtph_ps(
      _mm256_inserti128_si256(_mm256_castsi128_si256(loadu128(p0)), loadu128(p1), 1));
}

// A token's 4 activation bytes at a, in every lane (GCC folds it into vpdpbusd's {1to16}).
MM_INLINE __m512i act4(const int8_t* a) {
  return _mm512_set1_epi32(static_cast<int>(ld32(reinterpret_cast<const uint8_t*>(a))));
}

// Q8_0 / Q4_0 / Q5_0's accumulation: acc[j] = fma(float(I_b), dw_b · da_b, acc[j]) per row lane.
template <class P>
struct PairOneScale {
  static constexpr int64_t kCols = 32;
  template <int T>
  static MM_INLINE void block_acc(const uint8_t* p0, const uint8_t* p1, const TileActs<T>& xa,
                                  int64_t b, __m512* acc) {
    __m512i is[T];
    P::template block<T>(p0, p1, xa, b, is);
    const __m512 dw = pair_scales(p0, p1);
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j)
      acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is[j]),
                               _mm512_mul_ps(dw, _mm512_set1_ps(xa.d[j][b])), acc[j]);
  }
};

struct PairQ8 : PairOneScale<PairQ8> {
  static constexpr size_t kBlock = 16 + 256;
  template <int T>
  static MM_INLINE void block(const uint8_t* p0, const uint8_t* p1, const TileActs<T>& xa,
                              int64_t b, __m512i* is) {
    const __m512i bias = _mm512_set1_epi8(static_cast<char>(0x80));
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) is[j] = _mm512_setzero_si512();
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) {
      const __m512i w = _mm512_xor_si512(pair_load(p0 + 16 + 32 * k, p1 + 16 + 32 * k), bias);
#pragma GCC unroll 8
      for (int j = 0; j < T; ++j)
        is[j] = _mm512_dpbusd_epi32(is[j], w, act4(xa.q[j] + 32 * b + 4 * k));
    }
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j)
      is[j] = _mm512_sub_epi32(is[j], _mm512_set1_epi32(128 * static_cast<int>(xa.s[j][b])));
  }
};

// The nibble layout's 4 steps of both groups (levels 0..15, low nibble element 8k + e, high
// nibble 8k + 4 + e) against the token's 32 bytes from a_off: exact int32 dots, from zero.
template <int T>
MM_INLINE void pair_nibble_dots(const uint8_t* s0, const uint8_t* s1, const TileActs<T>& xa,
                                int64_t a_off, __m512i* z) {
  const __m512i m4 = _mm512_set1_epi8(0x0F);
#pragma GCC unroll 8
  for (int j = 0; j < T; ++j) z[j] = _mm512_setzero_si512();
#pragma GCC unroll 4
  for (int k = 0; k < 4; ++k) {
    const __m512i v = pair_load(s0 + 32 * k, s1 + 32 * k);
    const __m512i lo = _mm512_and_si512(v, m4);
    const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) {
      const int8_t* a = xa.q[j] + a_off + 8 * k;
      z[j] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(z[j], lo, act4(a)), hi, act4(a + 4));
    }
  }
}

struct PairQ4 : PairOneScale<PairQ4> {
  static constexpr size_t kBlock = 16 + 128;
  template <int T>
  static MM_INLINE void block(const uint8_t* p0, const uint8_t* p1, const TileActs<T>& xa,
                              int64_t b, __m512i* is) {
    pair_nibble_dots<T>(p0 + 16, p1 + 16, xa, 32 * b, is);
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j)
      is[j] = _mm512_sub_epi32(is[j], _mm512_set1_epi32(8 * static_cast<int>(xa.s[j][b])));
  }
};

// Q4_K (layout in ops/packed_rows.h): per sub-block, the exact dots times the row's 6-bit scale
// (vpmulld), summed in int32; the mins' term Σ_j m_j · S_j by vpmaddwd of each row's (m_2k,
// m_2k+1) against the token's (S_2k, S_2k+1). Then, as PQ4K:
//   acc = fma(float(Σ sc·I), d · da, acc);  acc = fnma(float(Σ m·S), dmin · da, acc)
struct PairQ4K {
  static constexpr size_t kBlock = 8 * 2 * 2 + 8 * 8 + 4 * 8 * 2 + 8 * 128;
  static constexpr int64_t kCols = 256;
  template <int T>
  static MM_INLINE void block_acc(const uint8_t* p0, const uint8_t* p1, const TileActs<T>& xa,
                                  int64_t b, __m512* acc) {
    __m512i is[T];
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) is[j] = _mm512_setzero_si512();
    for (int sb = 0; sb < 8; ++sb) {
      const __m128i sc8 =
          _mm_unpacklo_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p0 + 32 + 8 * sb)),
                             _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p1 + 32 + 8 * sb)));
      const __m512i sc32 = _mm512_cvtepu8_epi32(sc8);
      __m512i s32[T];
      pair_nibble_dots<T>(p0 + 160 + 128 * sb, p1 + 160 + 128 * sb, xa, 256 * b + 32 * sb, s32);
#pragma GCC unroll 8
      for (int j = 0; j < T; ++j) is[j] = _mm512_add_epi32(is[j], _mm512_mullo_epi32(s32[j], sc32));
    }
    const __m512 d = pair_scales(p0, p1), dmin = pair_scales(p0 + 16, p1 + 16);
    __m512i mn[4];
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k)
      mn[k] = _mm512_cvtepu8_epi16(_mm256_inserti128_si256(
          _mm256_castsi128_si256(loadu128(p0 + 96 + 16 * k)), loadu128(p1 + 96 + 16 * k), 1));
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) {
      // S_0..S_7 (sub-block sums from the 16-sums), as the int16 pairs (S_2k, S_2k+1).
      const __m256i s32 = _mm256_madd_epi16(loadu256(xa.s[j] + 16 * b), ones16());
      alignas(32) int32_t pairs[8];
      _mm256_store_si256(reinterpret_cast<__m256i*>(pairs), _mm256_packs_epi32(s32, s32));
      __m512i im = _mm512_setzero_si512();
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k)  // pairs 0, 1 in the low 128 bits, 2, 3 in the high
        im = _mm512_add_epi32(
            im, _mm512_madd_epi16(mn[k], _mm512_set1_epi32(pairs[k < 2 ? k : k + 2])));
      const __m512 da = _mm512_set1_ps(xa.d[j][b]);
      acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is[j]), _mm512_mul_ps(d, da), acc[j]);
      acc[j] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(im), _mm512_mul_ps(dmin, da), acc[j]);
    }
  }
};

// Tokens t0 .. t0+T-1 against rows 8g .. 8g+15 (both groups inside the row range).
template <class P, int T>
__attribute__((noinline)) void pair_tile(const Ctx& c, int64_t g, int64_t t0, bool first_pass) {
  const int64_t nb = c.w.n_cols / P::kCols;
  const uint8_t* p0 = c.w.packed + static_cast<size_t>(g * nb) * P::kBlock;
  const uint8_t* p1 = p0 + static_cast<size_t>(nb) * P::kBlock;
  const TileActs<T> xa(c.x, t0);
  __m512 acc[T];
#pragma GCC unroll 8
  for (int j = 0; j < T; ++j) acc[j] = _mm512_setzero_ps();
  // As packed_tile: the first tile of several tokens prefetches the groups' next bytes.
  const char* pf0 = reinterpret_cast<const char*>(p0) + kPackedPrefetch;
  const char* pf1 = reinterpret_cast<const char*>(p1) + kPackedPrefetch;
  for (int64_t b = 0; b < nb; ++b, p0 += P::kBlock, p1 += P::kBlock) {
    if (T > 1 && first_pass) {
      const char* end0 = reinterpret_cast<const char*>(p0) + P::kBlock + kPackedPrefetch;
      for (; pf0 < end0; pf0 += 64, pf1 += 64) {
        _mm_prefetch(pf0, _MM_HINT_T0);
        _mm_prefetch(pf1, _MM_HINT_T0);
      }
    }
    P::template block_acc<T>(p0, p1, xa, b, acc);
  }
#pragma GCC unroll 8
  for (int j = 0; j < T; ++j) _mm512_storeu_ps(c.y + (t0 + j) * c.ys + 8 * g, acc[j]);
}

template <class P, int T>
MM_INLINE void pair_tokens(const Ctx& c, int64_t g, int64_t t, int64_t t1, bool first_pass = true) {
  for (; t + T <= t1; t += T, first_pass = false) pair_tile<P, T>(c, g, t, first_pass);
  if constexpr (T > 1) pair_tokens<P, T - 1>(c, g, t, t1, first_pass);
}

// drive_packed (ops/avx2/packed_matmul.h) with the whole pairs of groups inside [r0, r1) on
// Pair (tiles of kPairTokens tokens) and any other group (a cut one, an odd last one) on Single.
constexpr int kPairTokens = 8;  // 8 int + 8 float accumulators of 32 registers
// Below this many tokens the product streams its weights from memory, and there the 8-row
// kernels read faster (Zen 5, 2 threads, alternated: one token 31 vs 52 GB/s of Q8_0 weights on
// pairs, four tokens ~10% fewer GOPS); from a prefill chunk's size on, pairs do twice the GOPS.
constexpr int64_t kPairMinTokens = 8;

template <class Pair, class Single>
void drive_pairs(const Ctx& c, int64_t r0, int64_t r1) {
  const int64_t n_tok = c.x.n_tok, g0 = r0 / 8, g1 = (r1 + 7) / 8;
  if (n_tok < kPairMinTokens) return drive_packed<Single>(c, r0, r1);
  int64_t tb = static_cast<int64_t>((192 * 1024) / std::max<size_t>(1, c.x.lay.stride));
  tb = std::max<int64_t>(kPairTokens, tb / kPairTokens * kPairTokens);
  for (int64_t t0 = 0; t0 < n_tok; t0 += tb) {
    const int64_t t1 = std::min(n_tok, t0 + tb);
    int64_t g = g0;
    if (8 * g < r0) packed_tokens<Single, Single::kTP>(c, g++, t0, t1, r0, r1);
    for (; 8 * g + 16 <= r1; g += 2) pair_tokens<Pair, kPairTokens>(c, g, t0, t1);
    for (; g < g1; ++g) packed_tokens<Single, Single::kTP>(c, g, t0, t1, r0, r1);
  }
}

}  // namespace
}  // namespace hearth::ops::mm
