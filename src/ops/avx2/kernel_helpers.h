// Internal to the AVX2-family kernel files: small inline helpers, the kernel context and a
// tile's activation rows. Everything is in an anonymous namespace: each file that includes this
// is compiled for its own instruction set (ops/avx2: AVX2+FMA+F16C, ops/avxvnni: + AVX-VNNI), and
// its copies must never be merged with another file's by the linker.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "ops/matmul_kernels.h"

namespace hearth::ops::mm {
namespace {

#define MM_INLINE inline __attribute__((always_inline))

// ---------------------------------------------------------------------------------------------
// Small helpers

MM_INLINE __m256i loadu256(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}
MM_INLINE __m128i loadu128(const void* p) {
  return _mm_loadu_si128(static_cast<const __m128i*>(p));
}
MM_INLINE uint16_t ld16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
MM_INLINE uint32_t ld32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
// An empty asm that "changes" v: the adds into v stay one chain in program order. Without it
// GCC re-associates a tile's int32 adds into a tree and spills the partial sums (PQ8, 4 tokens:
// 13 vectors stored and reloaded per block).
MM_INLINE void in_order(__m256i& v) {
  asm("" : "+x"(v));
}
MM_INLINE float h2f(uint16_t h) {
  return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h)));
}

// One element of an F32 / F16 / BF16 weight row as f32 (the float kernels' scalar tails).
template <TensorType WT>
MM_INLINE float float_weight(const uint8_t* p) {
  if constexpr (WT == TensorType::F32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  } else if constexpr (WT == TensorType::F16) {
    return h2f(ld16(p));
  } else {
    const uint32_t u = static_cast<uint32_t>(ld16(p)) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
}

// Where F32 / F16 / BF16 weight rows are read from (kElem bytes an element): the file's rows (a
// row's 8-element chunks 8·kElem bytes apart) or, for F16 / BF16, the copy packed in groups of 8
// rows (ops/packed_rows.h: 128 bytes apart, so that a group is one sequential stream). Element 8c
// of row r is at base(w, r) + c * kChunk.
template <size_t kElem, bool kPacked>
struct FloatRows {
  static_assert(!kPacked || kElem == 2, "only 2-byte floats have a packed layout");
  static constexpr size_t kChunk = kPacked ? 128 : 8 * kElem;
  // A batch (several tokens' FMAs per chunk) reads a packed group's stream slower than the
  // hardware prefetcher alone runs ahead of it: its tiles prefetch the stream this far ahead
  // into L2.
  static constexpr size_t kPrefetchAhead = 64 * kChunk;
  static MM_INLINE void prefetch_ahead(const uint8_t* chunk, int lines) {
    for (int l = 0; l < lines; ++l)
      _mm_prefetch(reinterpret_cast<const char*>(chunk) + kPrefetchAhead + 64 * l, _MM_HINT_T1);
  }
  static MM_INLINE const uint8_t* base(const MatrixView& w, int64_t r) {
    if constexpr (kPacked)
      return w.packed + static_cast<size_t>(r / 8) * static_cast<size_t>(w.n_cols / 8) * kChunk +
             static_cast<size_t>(r % 8) * 16;
    return w.row(r);
  }
};

// ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)): the one reduction order used everywhere.
MM_INLINE float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

MM_INLINE int32_t hsum_i32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

MM_INLINE __m256i ones16() {
  return _mm256_set1_epi16(1);
}

// Keeps v in a register at this point: stops the compiler from reassociating a running integer
// sum into a tree of spilled partial products.
MM_INLINE void opaque(__m256i& v) {
  asm("" : "+x"(v));
}

// Byte i of the result is 0xFF where bit i of x is set (i < 32).
MM_INLINE __m256i bits_to_bytes(uint32_t x) {
  const __m256i shuf =
      _mm256_setr_epi64x(0, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303);
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ULL));
  const __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(x)), shuf);
  return _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
}

// The f16 scales at offset `off` of R <= 8 blocks, widened into lanes 0..R-1 (exact).
template <int R>
MM_INLINE __m256 packed_scales(const uint8_t* const* blk, size_t off) {
  static_assert(R >= 1 && R <= 8);
  uint64_t lo = 0, hi = 0;
#pragma GCC unroll 8
  for (int k = 0; k < R; ++k) {
    const uint64_t h = ld16(blk[k] + off);
    if (k < 4)
      lo |= h << (16 * k);
    else
      hi |= h << (16 * (k - 4));
  }
  if constexpr (R <= 4) {
    return _mm256_castps128_ps256(_mm_cvtph_ps(_mm_cvtsi64_si128(static_cast<int64_t>(lo))));
  } else {
    return _mm256_cvtph_ps(_mm_set_epi64x(static_cast<int64_t>(hi), static_cast<int64_t>(lo)));
  }
}

// ---------------------------------------------------------------------------------------------
// Kernel context and a tile's activations

struct Ctx {
  const MatrixView& w;
  const Acts& x;
  float* y;
  int64_t ys;  // y row stride (floats per token)
};

// The quantized activation rows of a tile's T tokens: levels, block scales and block sums.
template <int T>
struct TileActs {
  const int8_t* q[T];
  const float* d[T];
  const int16_t* s[T];
  MM_INLINE TileActs(const Acts& x, int64_t t0) {
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) {
      q[j] = x.qs(t0 + j);
      d[j] = x.d(t0 + j);
      s[j] = x.sums(t0 + j);
    }
  }
};

}  // namespace
}  // namespace hearth::ops::mm
