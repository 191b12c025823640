// Internal to ops/avx512vnni/matmul_avx512vnni.cpp: F32 / F16 / BF16 weights × f32 activations
// for prefill chunks on 512-bit vectors, two weight rows per vector. The AVX2 kernel (KFloat in
// ops/avx2/matmul_avx2.cpp) runs, per (row, token), 8 lanes of FMA chains over the columns in
// steps of 8, then hsum and a scalar FMA tail; here lanes 0-7 carry row r's chains and lanes
// 8-15 row r + 1's against the same 8 activations (broadcast to both halves), and each half is
// reduced by the same hsum and tail: bit-identical results at twice the FMA width. kPacked: F16 /
// BF16 rows packed in groups of 8 (ops/packed_rows.h), read through FloatRows at the same
// arithmetic.
#pragma once

#include <immintrin.h>

#include <cmath>
#include <cstdint>

#include "ops/avx2/kernel_helpers.h"

namespace hearth::ops::mm {
namespace {

template <TensorType WT, bool kPacked = false>
struct FloatPairs {
  // Packed rows: whole groups (4 pairs) × 6 tokens, 24 accumulators; else 3 pairs, 18.
  static constexpr int kPairs = kPacked ? 4 : 3, kTokens = 6;
  static constexpr size_t kElem = WT == TensorType::F32 ? 4 : 2;
  using Rows = FloatRows<kElem, kPacked>;

  // Elements k .. k+7 of rows a (lanes 0-7) and b (lanes 8-15), as f32.
  static MM_INLINE __m512 load_pair(const uint8_t* a, const uint8_t* b) {
    if constexpr (WT == TensorType::F32) {
      const __m256d lo = _mm256_castps_pd(_mm256_loadu_ps(reinterpret_cast<const float*>(a)));
      const __m256d hi = _mm256_castps_pd(_mm256_loadu_ps(reinterpret_cast<const float*>(b)));
      return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castpd256_pd512(lo), hi, 1));
    } else {
      const __m256i h =
          _mm256_inserti128_si256(_mm256_castsi128_si256(loadu128(a)), loadu128(b), 1);
      if constexpr (WT == TensorType::F16) return _mm512_cvtph_ps(h);
      return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }
  }
  // 8 activations in both halves.
  static MM_INLINE __m512 both_halves(const float* x) {
    return _mm512_castpd_ps(_mm512_broadcast_f64x4(_mm256_castps_pd(_mm256_loadu_ps(x))));
  }

  // Rows r .. r + 2P - 1 (a last odd row paired with itself, its copy not stored) × tokens
  // t0 .. t0 + T - 1.
  template <int P, int T>
  __attribute__((noinline)) static void tile(const Ctx& c, int64_t r, int64_t r1, int64_t t0) {
    const int64_t n = c.w.n_cols, n8 = n / 8 * 8;
    const uint8_t* wr[2 * P];
#pragma GCC unroll 8
    for (int i = 0; i < 2 * P; ++i) wr[i] = Rows::base(c.w, std::min(r + i, r1 - 1));
    const float* xr[T];
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) xr[j] = c.x.f32(t0 + j);
    __m512 acc[P][T];
#pragma GCC unroll 8
    for (int p = 0; p < P; ++p)
      for (int j = 0; j < T; ++j) acc[p][j] = _mm512_setzero_ps();
    // Packed: the group's stream prefetched ahead (measured, 2 threads, 3072x1024 F16 from
    // memory, 6 tokens: 97 GOPS without, 168 with; 2-4 KiB ahead into L1 126-133; prefill
    // chunks unchanged).
    for (int64_t k = 0; k < n8; k += 8) {
      const size_t at = static_cast<size_t>(k / 8) * Rows::kChunk;
      if constexpr (kPacked) Rows::prefetch_ahead(wr[0] + at, 2);
      __m512 wv[P];
#pragma GCC unroll 8
      for (int p = 0; p < P; ++p) wv[p] = load_pair(wr[2 * p] + at, wr[2 * p + 1] + at);
#pragma GCC unroll 8
      for (int j = 0; j < T; ++j) {
        const __m512 xv = both_halves(xr[j] + k);
#pragma GCC unroll 8
        for (int p = 0; p < P; ++p) acc[p][j] = _mm512_fmadd_ps(wv[p], xv, acc[p][j]);
      }
    }
#pragma GCC unroll 8
    for (int p = 0; p < P; ++p)
      for (int j = 0; j < T; ++j) {
        const __m512d a = _mm512_castps_pd(acc[p][j]);
        const __m256 halves[2] = {_mm256_castpd_ps(_mm512_extractf64x4_pd(a, 0)),
                                  _mm256_castpd_ps(_mm512_extractf64x4_pd(a, 1))};
        for (int h = 0; h < 2 && r + 2 * p + h < r1; ++h) {
          const uint8_t* w = wr[2 * p + h];
          float s = hsum(halves[h]);
          for (int64_t k = n8; k < n; ++k)  // the file's rows only (packed: n8 == n)
            s = std::fma(float_weight<WT>(w + k * kElem), xr[j][k], s);
          c.y[(t0 + j) * c.ys + r + 2 * p + h] = s;
        }
      }
  }

  template <int P, int T>
  static MM_INLINE void tokens(const Ctx& c, int64_t r, int64_t r1, int64_t t, int64_t t1) {
    for (; t + T <= t1; t += T) tile<P, T>(c, r, r1, t);
    if constexpr (T > 1) tokens<P, T - 1>(c, r, r1, t, t1);
  }

  // As the AVX2 driver's prefill: token blocks whose activations stay in L2, row tiles of 2P.
  static void drive(const Ctx& c, int64_t r0, int64_t r1) {
    const int64_t n_tok = c.x.n_tok;
    int64_t tb = static_cast<int64_t>((192 * 1024) / std::max<size_t>(1, c.x.lay.stride));
    tb = std::max<int64_t>(kTokens, tb / kTokens * kTokens);
    for (int64_t t0 = 0; t0 < n_tok; t0 += tb) {
      const int64_t t1 = std::min(n_tok, t0 + tb);
      int64_t r = r0;
      for (; r + 2 * kPairs <= r1; r += 2 * kPairs) tokens<kPairs, kTokens>(c, r, r1, t0, t1);
      for (; r < r1; r += 2) tokens<1, kTokens>(c, r, r1, t0, t1);
    }
  }
};

// On the file's rows, prefill chunks only: decode and small batches stream the matrix, where the
// AVX2 kernel's prefetching row tiles read faster. On packed rows, every batch of 2 or more
// tokens: each tile is a whole group, one stream (measured, Qwen3-0.6B F16, 2 threads,
// concurrent streams' aggregate tok/s: 2 / 3 / 4 streams 52 / 66 / 64 with group tiles, 44 /
// 45 / 48 with the AVX2 kernel's 3-row tiles).
constexpr int64_t kFloatPairMinTokens = 8;
constexpr int64_t kPackedFloatPairMinTokens = 2;

}  // namespace
}  // namespace hearth::ops::mm
