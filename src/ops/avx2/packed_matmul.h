// Internal to the AVX2-family kernel files: the kernels for matrices packed in groups of 8 rows
// (ops/packed_rows.h). Included by ops/avx2/matmul_avx2.cpp (AVX2 products) and by
// ops/avxvnni/matmul_avxvnni.cpp (the same kernels on vpdpbusd); see kernel_helpers.h for why it is
// all in an anonymous namespace.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "ops/avx2/kernel_helpers.h"

namespace hearth::ops::mm {
namespace {

// AVX2's exact u8 × s8 dot of four: vpmaddubsw, whose int16 pair sums must not saturate (the
// callers keep |u · s| pairs below 2^15), then vpmaddwd against ones.
struct DotAvx2 {
  // Whether dot4 is cheap enough to use per step, rather than summing steps in int16 first.
  static constexpr bool kWideAccumulate = false;
  static MM_INLINE __m256i dot4(__m256i acc, __m256i u, __m256i s) {
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), ones16()));
    in_order(acc);
    return acc;
  }
};

// Q8_0 / Q4_0 (Q4_K below) packed in groups of 8 rows (ops/packed_rows.h): one row per 32-bit lane.
// Activation bytes are broadcast 4 at a time to every lane and multiplied with vpmaddubsw, so each
// row's exact block dot I_b lands in its own lane. Then per row, in block order:
//   acc = fma(float(I_b), dw_b · da_b, acc)
// That one chain is all a (row, token) result ever is, whatever the tile, the batch or the row
// split: batch invariant. Against the file-layout kernels this saves the horizontal reductions,
// the per-row scale assembly, and (8 rows per vector) 7 of every 8 converts and FMAs.
//
// Q8_0: vpsignb moves w's sign onto a, vpmaddubsw(|w|, ±a) (|w| <= 128: pair sums < 2^15),
// vpmaddwd per 4-element step. Q4_0: levels 0..15 straight into vpmaddubsw; the 8 steps' int16
// sums fit (8 · 2 · 15 · 127 < 2^15) and one vpmaddwd per block widens them, then
// I_b = Σ q·a − 8·S_b with S_b the activation block's sum (exact).
//
// The integer products come from a dot policy D (DotAvx2 above, DotVnni in ops/avxvnni): D::dot4
// adds each 32-bit lane's four u8 × s8 products to it, exactly. With AVX-VNNI that is one
// vpdpbusd; both give the same integers, so the two builds of a kernel are bit-identical.
//
// The formats with one f16 scale per row and block (Q8_0, Q4_0): P::block gives the exact I_b
// of the block's 8 rows, then acc[j] += float(I_b) · (dw_b · da_b).
template <class P>
struct OneScalePerBlock {
  static constexpr int64_t kCols = 32;
  template <int T>
  static MM_INLINE void block_acc(const uint8_t* p, const TileActs<T>& xa, int64_t b, __m256* acc) {
    __m256i is[T];
    P::template block<T>(p, xa, b, is);
    const __m256 dw = _mm256_cvtph_ps(loadu128(p));
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j)
      acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(is[j]),
                               _mm256_mul_ps(dw, _mm256_broadcast_ss(xa.d[j] + b)), acc[j]);
  }
};

template <class D>
struct PQ8 : OneScalePerBlock<PQ8<D>> {
  static constexpr size_t kBlock = 16 + 256;
  static constexpr int kTP = 6;  // 6 int + 6 float accumulators + w, |w|, a, ones
  template <int T>
  static MM_INLINE void block(const uint8_t* p, const TileActs<T>& xa, int64_t b, __m256i* is) {
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) is[j] = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) {
      const __m256i w = loadu256(p + 16 + 32 * k);
      const __m256i aw = _mm256_sign_epi8(w, w);  // |w|, read unsigned (-128 -> 128)
#pragma GCC unroll 8
      for (int j = 0; j < T; ++j) {
        const uint8_t* a = reinterpret_cast<const uint8_t*>(xa.q[j]) + 32 * b + 4 * k;
        const __m256i sa = _mm256_sign_epi8(_mm256_set1_epi32(static_cast<int>(ld32(a))), w);
        is[j] = D::dot4(is[j], aw, sa);
      }
    }
  }
};

// 32 elements of 8 rows in the nibble layout (4 steps of 8 rows x 4 bytes at `steps`: low nibble
// element 8k + e, high nibble 8k + 4 + e, levels 0..15) against activation bytes from offset
// `a_off` of each token: acc[j] = step(acc[j], lo, a_lo, hi, a_hi) per step, from zero.
template <int T, class Step>
MM_INLINE void nibble_steps(const uint8_t* steps, const TileActs<T>& xa, int64_t a_off,
                            __m256i* acc, Step&& step) {
  const __m256i m4 = _mm256_set1_epi8(0x0F);
#pragma GCC unroll 8
  for (int j = 0; j < T; ++j) acc[j] = _mm256_setzero_si256();
#pragma GCC unroll 4
  for (int k = 0; k < 4; ++k) {
    const __m256i v = loadu256(steps + 32 * k);
    const __m256i lo = _mm256_and_si256(v, m4);
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) {
      const uint8_t* a = reinterpret_cast<const uint8_t*>(xa.q[j]) + a_off + 8 * k;
      acc[j] = step(acc[j], lo, _mm256_set1_epi32(static_cast<int>(ld32(a))), hi,
                    _mm256_set1_epi32(static_cast<int>(ld32(a + 4))));
    }
  }
}

// Their int16 pair sums: s16[j] (< 2^15: 8 · 2 · 15 · 128).
template <int T>
MM_INLINE void nibble_pair_sums(const uint8_t* steps, const TileActs<T>& xa, int64_t a_off,
                                __m256i* s16) {
  nibble_steps<T>(
      steps, xa, a_off, s16,
      [](__m256i acc, __m256i lo, __m256i alo, __m256i hi, __m256i ahi)
          __attribute__((always_inline)) {
            return _mm256_add_epi16(acc, _mm256_add_epi16(_mm256_maddubs_epi16(lo, alo),
                                                          _mm256_maddubs_epi16(hi, ahi)));
          });
}

// Their exact dots in int32 lanes, each step's four products straight into them (for dots that
// do not saturate: D::kWideAccumulate). A policy with its own wider loop for them
// (D::nibble_dots: the AVX-512 build) gives the same integers.
template <class D, int T>
MM_INLINE void nibble_dots(const uint8_t* steps, const TileActs<T>& xa, int64_t a_off,
                           __m256i* s32) {
  if constexpr (requires { D::kOwnNibbleDots; }) {
    D::template nibble_dots<T>(steps, xa, a_off, s32);
    return;
  }
  nibble_steps<T>(
      steps, xa, a_off, s32,
      [](__m256i acc, __m256i lo, __m256i alo, __m256i hi, __m256i ahi)
          __attribute__((always_inline)) { return D::dot4(D::dot4(acc, lo, alo), hi, ahi); });
}

template <class D>
struct PQ4 : OneScalePerBlock<PQ4<D>> {
  static constexpr size_t kBlock = 16 + 128;
  static constexpr int kTP = 6;
  template <int T>
  static MM_INLINE void block(const uint8_t* p, const TileActs<T>& xa, int64_t b, __m256i* is) {
    if constexpr (D::kWideAccumulate) {
      nibble_dots<D, T>(p + 16, xa, 32 * b, is);
#pragma GCC unroll 8
      for (int j = 0; j < T; ++j)
        is[j] = _mm256_sub_epi32(is[j], _mm256_set1_epi32(8 * static_cast<int>(xa.s[j][b])));
    } else {
      __m256i s16[T];
      nibble_pair_sums<T>(p + 16, xa, 32 * b, s16);
#pragma GCC unroll 8
      for (int j = 0; j < T; ++j)
        is[j] = _mm256_sub_epi32(_mm256_madd_epi16(s16[j], ones16()),
                                 _mm256_set1_epi32(8 * static_cast<int>(xa.s[j][b])));
    }
  }
};

// Q5_0: Q4_0's nibble steps, with each step's fifth bits (row r's byte k of the 32 bytes after
// them) turned into 16s and or-ed into the levels (0..31) before the products. Pair sums of
// levels up to 31 would overflow Q4_0's int16 sums over 8 steps, so every step widens (D::dot4:
// vpmaddubsw pairs <= 2 · 31 · 128 < 2^15, then vpmaddwd; or one vpdpbusd).
// I_b = Σ q·a − 16·S_b, exact.
template <class D>
struct PQ5 : OneScalePerBlock<PQ5<D>> {
  static constexpr size_t kBlock = 16 + 128 + 32;
  static constexpr int kTP = 4;  // 4 int + 4 float accumulators + the bit-expansion constants
  template <int T>
  static MM_INLINE void block(const uint8_t* p, const TileActs<T>& xa, int64_t b, __m256i* is) {
    const __m256i h = loadu256(p + 16 + 128);
    const __m256i m4 = _mm256_set1_epi8(0x0F), sixteen = _mm256_set1_epi8(0x10);
    const __m256i bit_lo = _mm256_set1_epi32(0x08040201);
    const __m256i bit_hi = _mm256_set1_epi32(static_cast<int>(0x80402010u));
    // Byte k of each 32-bit lane, copied to all four of its bytes (vpshufb works per 128 bits).
    const __m256i lane_k0 = _mm256_setr_epi8(0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12, 0,
                                             0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12);
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) is[j] = _mm256_setzero_si256();
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      const __m256i v = loadu256(p + 16 + 32 * k);
      const __m256i hk =
          _mm256_shuffle_epi8(h, _mm256_add_epi8(lane_k0, _mm256_set1_epi8(static_cast<char>(k))));
      const __m256i five_lo =
          _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(hk, bit_lo), bit_lo), sixteen);
      const __m256i five_hi =
          _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(hk, bit_hi), bit_hi), sixteen);
      const __m256i lo = _mm256_or_si256(_mm256_and_si256(v, m4), five_lo);
      const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), m4), five_hi);
#pragma GCC unroll 8
      for (int j = 0; j < T; ++j) {
        const uint8_t* a = reinterpret_cast<const uint8_t*>(xa.q[j]) + 32 * b + 8 * k;
        is[j] = D::dot4(D::dot4(is[j], lo, _mm256_set1_epi32(static_cast<int>(ld32(a)))), hi,
                        _mm256_set1_epi32(static_cast<int>(ld32(a + 4))));
      }
    }
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j)
      is[j] = _mm256_sub_epi32(is[j], _mm256_set1_epi32(16 * static_cast<int>(xa.s[j][b])));
  }
};

// Q4_K, one super-block (8 sub-blocks of 32) of 8 rows. Each sub-block's int16 pair sums are
// built as Q4_0's (levels 0..15 into vpmaddubsw, 4 steps: < 2^15), then one vpmaddwd against the
// row's 6-bit scale in both int16 halves gives sc_j · I_j per row lane, summed over j in int32
// (|Σ| <= 8 · 63 · 32 · 15 · 128 < 2^31). The mins' term Σ_j m_j · S_j (S_j the activation sum
// over sub-block j, from the Q8_K 16-sums) is 4 vpmaddwd of (m_2k, m_2k+1) row pairs against the
// broadcast (S_2k, S_2k+1). Then per row, in order:
//   acc = fma(float(Σ sc·I), d · da, acc);  acc = fnma(float(Σ m·S), dmin · da, acc)
template <class D>
struct PQ4K {
  static constexpr size_t kBlock = 8 * 2 * 2 + 8 * 8 + 4 * 8 * 2 + 8 * 128;
  static constexpr int64_t kCols = 256;
  static constexpr int kTP = 5;
  template <int T>
  static MM_INLINE void block_acc(const uint8_t* p, const TileActs<T>& xa, int64_t b, __m256* acc) {
    __m256i is[T];
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) is[j] = _mm256_setzero_si256();
    for (int sb = 0; sb < 8; ++sb) {
      const __m256i sc32 =
          _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 32 + 8 * sb)));
      if constexpr (D::kWideAccumulate) {  // I_j in int32, then one vpmulld by the scale
        __m256i s32[T];
        nibble_dots<D, T>(p + 160 + 128 * sb, xa, 256 * b + 32 * sb, s32);
#pragma GCC unroll 8
        for (int j = 0; j < T; ++j)
          is[j] = _mm256_add_epi32(is[j], _mm256_mullo_epi32(s32[j], sc32));
      } else {
        __m256i s16[T];
        nibble_pair_sums<T>(p + 160 + 128 * sb, xa, 256 * b + 32 * sb, s16);
        const __m256i sc = _mm256_or_si256(sc32, _mm256_slli_epi32(sc32, 16));
#pragma GCC unroll 8
        for (int j = 0; j < T; ++j) is[j] = _mm256_add_epi32(is[j], _mm256_madd_epi16(s16[j], sc));
      }
    }
    const __m256 d = _mm256_cvtph_ps(loadu128(p)), dmin = _mm256_cvtph_ps(loadu128(p + 16));
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) {
      // S_0..S_7 as int32, then int16: as int32 lanes [P0 P1 P0 P1 | P2 P3 P2 P3], P_k the pair
      // (S_2k, S_2k+1).
      const __m256i s32 = _mm256_madd_epi16(loadu256(xa.s[j] + 16 * b), ones16());
      const __m256i pairs = _mm256_packs_epi32(s32, s32);
      __m256i im = _mm256_setzero_si256();
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        const __m256i mn = _mm256_cvtepu8_epi16(loadu128(p + 96 + 16 * k));
        const __m256i pk = _mm256_permutevar8x32_epi32(pairs, _mm256_set1_epi32(k < 2 ? k : k + 2));
        im = _mm256_add_epi32(im, _mm256_madd_epi16(mn, pk));
      }
      const __m256 da = _mm256_broadcast_ss(xa.d[j] + b);
      acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(is[j]), _mm256_mul_ps(d, da), acc[j]);
      acc[j] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(im), _mm256_mul_ps(dmin, da), acc[j]);
    }
  }
};

// Q6_K, one super-block of 8 rows, in 16 pairs of 4-element steps (a pair = one 16-element
// sub-block). Levels 0..63 are rebuilt per step from the low nibbles and the 2-bit planes (shared
// by the tile's tokens), go straight into vpmaddubsw (lo + hi of one step: 4 · 63 · 128 < 2^15),
// and each step's int16 pair sums meet the row's scale in a vpmaddwd. The −32 offset is
// 32 · Σ_k sc_k · bsum_k, 8 vpmaddwd of row scale pairs against broadcast 16-sum pairs. Per row:
//   acc = fma(float(Σ_k sc_k · I_k − 32 · Σ_k sc_k · bsum_k), d · da, acc)
template <class D>
struct PQ6K {
  static constexpr size_t kBlock = 8 * 2 + 8 * 16 + 16 * 96;
  static constexpr int64_t kCols = 256;
  static constexpr int kTP = 4;
  template <int T>
  static MM_INLINE void block_acc(const uint8_t* p, const TileActs<T>& xa, int64_t b, __m256* acc) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), m30 = _mm256_set1_epi8(0x30);
    const __m256i dup_lo = _mm256_setr_epi8(0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13, 0,
                                            1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13);
    const __m256i dup_hi = _mm256_add_epi8(dup_lo, _mm256_set1_epi8(2));
    __m256i is[T], bs[T];
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) is[j] = bs[j] = _mm256_setzero_si256();
    __m256i scp = _mm256_setzero_si256();
    for (int P = 0; P < 16; ++P) {
      if (P % 2 == 0) {
        scp = _mm256_cvtepi8_epi16(loadu128(p + 16 + 8 * P));
#pragma GCC unroll 8
        for (int j = 0; j < T; ++j) {
          const uint8_t* s = reinterpret_cast<const uint8_t*>(xa.s[j] + 16 * b + P);
          bs[j] = _mm256_add_epi32(
              bs[j], _mm256_madd_epi16(scp, _mm256_set1_epi32(static_cast<int>(ld32(s)))));
        }
      }
      const __m256i sc = _mm256_shuffle_epi8(scp, P % 2 == 0 ? dup_lo : dup_hi);
      const uint8_t* q = p + 144 + 96 * P;
      const __m256i h = loadu256(q), l0 = loadu256(q + 32), l1 = loadu256(q + 64);
      const __m256i w[4] = {
          _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_and_si256(_mm256_slli_epi16(h, 4), m30)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                          _mm256_and_si256(_mm256_slli_epi16(h, 2), m30)),
          _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_and_si256(h, m30)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                          _mm256_and_si256(_mm256_srli_epi16(h, 2), m30))};
      if constexpr (D::kWideAccumulate) {
        // I_P in int32 (four dots), then one vpmulld by the row's scale, sign-extended from the
        // low (P even) or high (P odd) word of each lane of scp.
        const __m256i sc32 = P % 2 == 0 ? _mm256_srai_epi32(_mm256_slli_epi32(scp, 16), 16)
                                        : _mm256_srai_epi32(scp, 16);
#pragma GCC unroll 8
        for (int j = 0; j < T; ++j) {
          const uint8_t* a = reinterpret_cast<const uint8_t*>(xa.q[j]) + 256 * b + 16 * P;
          __m256i t = _mm256_setzero_si256();
#pragma GCC unroll 4
          for (int e = 0; e < 4; ++e)
            t = D::dot4(t, w[e], _mm256_set1_epi32(static_cast<int>(ld32(a + 4 * e))));
          is[j] = _mm256_add_epi32(is[j], _mm256_mullo_epi32(t, sc32));
        }
        continue;
      }
#pragma GCC unroll 8
      for (int j = 0; j < T; ++j) {
        const uint8_t* a = reinterpret_cast<const uint8_t*>(xa.q[j]) + 256 * b + 16 * P;
#pragma GCC unroll 2
        for (int st = 0; st < 2; ++st) {
          const __m256i s16 = _mm256_add_epi16(
              _mm256_maddubs_epi16(w[2 * st],
                                   _mm256_set1_epi32(static_cast<int>(ld32(a + 8 * st)))),
              _mm256_maddubs_epi16(w[2 * st + 1],
                                   _mm256_set1_epi32(static_cast<int>(ld32(a + 8 * st + 4)))));
          is[j] = _mm256_add_epi32(is[j], _mm256_madd_epi16(s16, sc));
        }
      }
    }
    const __m256 d = _mm256_cvtph_ps(loadu128(p));
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) {
      const __m256i i32 = _mm256_sub_epi32(is[j], _mm256_slli_epi32(bs[j], 5));
      acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i32),
                               _mm256_mul_ps(d, _mm256_broadcast_ss(xa.d[j] + b)), acc[j]);
    }
  }
};

// Software prefetch distance of the packed tiles' first pass over a group (see packed_tile).
constexpr int64_t kPackedPrefetch = 3072;

template <class P, int T>
__attribute__((noinline)) void packed_tile(const Ctx& c, int64_t g, int64_t t0, int64_t r0,
                                           int64_t r1, bool first_pass) {
  const int64_t nb = c.w.n_cols / P::kCols;
  const uint8_t* p = c.w.packed + static_cast<size_t>(g * nb) * P::kBlock;
  const TileActs<T> xa(c.x, t0);
  __m256 acc[T];
#pragma GCC unroll 8
  for (int j = 0; j < T; ++j) acc[j] = _mm256_setzero_ps();
  // The first tile of several tokens over a group streams its weights from memory: it
  // prefetches kPackedPrefetch bytes ahead, a line for each line it reads. A small batch
  // (concurrent decodes) computes long enough per byte that the hardware prefetchers fall
  // behind (measured, 4 tokens, 2 threads, from memory: Q8_0 1024x3072 +15%, Q4_0 +14%,
  // 3072x1024 unchanged). One token (plain decode) reads at full speed without it: it only
  // lost there. Later tiles find the group in cache.
  const char* pf = reinterpret_cast<const char*>(p) + kPackedPrefetch;
  for (int64_t b = 0; b < nb; ++b, p += P::kBlock) {
    if (T > 1 && first_pass)
      for (const char* end = reinterpret_cast<const char*>(p) + P::kBlock + kPackedPrefetch;
           pf < end; pf += 64)
        _mm_prefetch(pf, _MM_HINT_T0);
    P::template block_acc<T>(p, xa, b, acc);
  }
  const int64_t row0 = 8 * g;
  if (row0 >= r0 && row0 + 8 <= r1) {
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) _mm256_storeu_ps(c.y + (t0 + j) * c.ys + row0, acc[j]);
    return;
  }
  // A group the row range cuts: only its rows in [r0, r1) are written.
  alignas(32) int32_t m[8];
  for (int i = 0; i < 8; ++i) m[i] = row0 + i >= r0 && row0 + i < r1 ? -1 : 0;
  const __m256i mask = _mm256_load_si256(reinterpret_cast<const __m256i*>(m));
#pragma GCC unroll 8
  for (int j = 0; j < T; ++j) _mm256_maskstore_ps(c.y + (t0 + j) * c.ys + row0, mask, acc[j]);
}

// Tokens [t, t1) of group g in tiles of T, then the remainder with smaller tiles.
template <class P, int T>
MM_INLINE void packed_tokens(const Ctx& c, int64_t g, int64_t t, int64_t t1, int64_t r0, int64_t r1,
                             bool first_pass = true) {
  for (; t + T <= t1; t += T, first_pass = false) packed_tile<P, T>(c, g, t, r0, r1, first_pass);
  if constexpr (T > 1) packed_tokens<P, T - 1>(c, g, t, t1, r0, r1, first_pass);
}

template <class P>
void drive_packed(const Ctx& c, int64_t r0, int64_t r1) {
  const int64_t n_tok = c.x.n_tok, g0 = r0 / 8, g1 = (r1 + 7) / 8;
  // Token blocks whose activations stay in L2 while each group's weights pass over them.
  int64_t tb = static_cast<int64_t>((192 * 1024) / std::max<size_t>(1, c.x.lay.stride));
  tb = std::max<int64_t>(P::kTP, tb / P::kTP * P::kTP);
  for (int64_t t0 = 0; t0 < n_tok; t0 += tb) {
    const int64_t t1 = std::min(n_tok, t0 + tb);
    for (int64_t g = g0; g < g1; ++g) packed_tokens<P, P::kTP>(c, g, t0, t1, r0, r1);
  }
}

}  // namespace
}  // namespace hearth::ops::mm
