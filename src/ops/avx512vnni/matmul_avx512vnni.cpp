// The packed kernels (ops/avx2/packed_matmul.h) on vpdpbusd in its AVX512-VNNI + AVX512-VL
// encoding (EVEX, still on 256-bit vectors): the VNNI path for CPUs that have AVX-512 VNNI but
// not AVX-VNNI (AMD Zen 4, Intel Ice Lake to Sapphire Rapids). Compiled with -mavx2 -mfma -mf16c
// -mavx512f -mavx512bw -mavx512vl -mavx512vnni; called only at SimdLevel::Avx2Vnni when
// ops::vnni_evex(). The same exact int32 sums as ops/avxvnni/matmul_avxvnni.cpp, so every result
// is bit-identical to the AVX2 and AVX-VNNI kernels'. On 512-bit vectors: Q8_0, Q4_0 and Q4_K
// over two groups at once for prefill chunks (group_pairs.h), and per group for fewer tokens
// (PQ8Zmm; the nibble formats' dots in DotVnniEvex::nibble_dots).
// GCC 12's AVX-512 intrinsics pass _mm*_undefined_*() values to their builtins, which
// -Wmaybe-uninitialized and -Wuninitialized report (a false positive; nothing reads those
// lanes).
#if defined(__GNUC__) && !defined(__clang__)  // GCC only; clang has no such group
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include "ops/avx2/kernel_helpers.h"
#include "ops/avx2/packed_matmul.h"
#include "ops/avx512vnni/float_pairs.h"
#include "ops/avx512vnni/group_pairs.h"
#include "ops/matmul_kernels.h"

namespace hearth::ops::mm {
namespace {

// The exact int32 sums of a vector's two 256-bit halves.
MM_INLINE __m256i add_halves(__m512i z) {
  return _mm256_add_epi32(_mm512_castsi512_si256(z), _mm512_extracti64x4_epi64(z, 1));
}

// dword `lo` of v into lanes 0-7 and dword `hi` into lanes 8-15.
MM_INLINE __m512i two_dwords(__m128i v, int lo, int hi) {
  const __m512i idx =
      _mm512_set_epi32(hi, hi, hi, hi, hi, hi, hi, hi, lo, lo, lo, lo, lo, lo, lo, lo);
  return _mm512_permutexvar_epi32(idx, _mm512_zextsi128_si512(v));
}

struct DotVnniEvex {
  static constexpr bool kWideAccumulate = true;
  static MM_INLINE __m256i dot4(__m256i acc, __m256i u, __m256i s) {
    return _mm256_dpbusd_epi32(acc, u, s);
  }
  // The nibble layout's four steps (packed_matmul.h: nibble_steps) two at a time: one load
  // brings steps 2k and 2k + 1 of the 8 rows; the token's 16 activation bytes give the low
  // nibbles' dwords (0 and 2) and the high nibbles' (1 and 3) to the two halves.
  static constexpr bool kOwnNibbleDots = true;
  template <int T>
  static MM_INLINE void nibble_dots(const uint8_t* steps, const TileActs<T>& xa, int64_t a_off,
                                    __m256i* s32) {
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    __m512i z[T];
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) z[j] = _mm512_setzero_si512();
#pragma GCC unroll 2
    for (int k = 0; k < 2; ++k) {
      const __m512i v = _mm512_loadu_si512(steps + 64 * k);
      const __m512i lo = _mm512_and_si512(v, m4);
      const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
#pragma GCC unroll 8
      for (int j = 0; j < T; ++j) {
        const __m128i a =
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(xa.q[j] + a_off + 16 * k));
        z[j] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(z[j], lo, two_dwords(a, 0, 2)), hi,
                                   two_dwords(a, 1, 3));
      }
    }
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) s32[j] = add_halves(z[j]);
  }
};

// Q8_0 on 512-bit vectors: one load brings two 4-byte steps of the group's 8 rows (the packed
// layout unchanged), each token's 8 activation bytes go to the low half (step 2k) and the high
// half (step 2k + 1), and one vpdpbusd does both steps. AVX-512 has no vpsignb, so |w| comes
// from vpabsb and w's sign moves onto a by a masked negation (0 - a where w < 0; where w = 0,
// |w| = 0 makes the product 0 either way, and -(-128) wraps exactly as vpsignb's does). The two
// halves' int32 sums add into the block's exact I_b: the same integers as PQ8, so the same
// floats after.
struct PQ8Zmm : OneScalePerBlock<PQ8Zmm> {
  static constexpr size_t kBlock = 16 + 256;
  static constexpr int kTP = 8;  // 32 vector registers: 8 int + 8 float accumulators and more
  template <int T>
  static MM_INLINE void block(const uint8_t* p, const TileActs<T>& xa, int64_t b, __m256i* is) {
    // Lanes 0-7 take the first activation dword, lanes 8-15 the second.
    const __m512i halves = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    __m512i z[T];
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) z[j] = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      const __m512i w = _mm512_loadu_si512(p + 16 + 64 * k);
      const __m512i aw = _mm512_abs_epi8(w);  // read unsigned: -128 -> 128
      const __mmask64 negative = _mm512_movepi8_mask(w);
#pragma GCC unroll 8
      for (int j = 0; j < T; ++j) {
        const auto* a = reinterpret_cast<const __m128i*>(xa.q[j] + 32 * b + 8 * k);
        __m512i av = _mm512_permutexvar_epi32(halves, _mm512_zextsi128_si512(_mm_loadl_epi64(a)));
        av = _mm512_mask_sub_epi8(av, negative, _mm512_setzero_si512(), av);
        z[j] = _mm512_dpbusd_epi32(z[j], aw, av);
      }
    }
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) is[j] = add_halves(z[j]);
  }
};

// F32 / F16 / BF16 prefill chunks, and batches of 2+ tokens on packed rows (float_pairs.h);
// false for fewer tokens (the AVX2 kernels then run).
bool float_rows(const Ctx& c, int64_t r0, int64_t r1) {
  const bool packed = c.w.packed != nullptr;
  if (c.x.n_tok < (packed ? kPackedFloatPairMinTokens : kFloatPairMinTokens)) return false;
  switch (c.w.type) {
    case TensorType::F32:
      FloatPairs<TensorType::F32>::drive(c, r0, r1);
      return true;
    case TensorType::F16:
      packed ? FloatPairs<TensorType::F16, true>::drive(c, r0, r1)
             : FloatPairs<TensorType::F16>::drive(c, r0, r1);
      return true;
    case TensorType::BF16:
      packed ? FloatPairs<TensorType::BF16, true>::drive(c, r0, r1)
             : FloatPairs<TensorType::BF16>::drive(c, r0, r1);
      return true;
    default:
      return false;
  }
}

}  // namespace

bool rows_avx512vnni(const MatrixView& w, const Acts& x, float* y, int64_t y_stride, int64_t r0,
                     int64_t r1) {
  const Ctx c{w, x, y, y_stride};
  if (x.type == TensorType::F32) return float_rows(c, r0, r1);  // float weights: f32 activations
  if (w.packed == nullptr) return false;
  switch (w.type) {
    case TensorType::Q8_0:
      drive_pairs<PairQ8, PQ8Zmm>(c, r0, r1);
      return true;
    case TensorType::Q4_0:
      drive_pairs<PairQ4, PQ4<DotVnniEvex>>(c, r0, r1);
      return true;
    case TensorType::Q5_0:
      drive_packed<PQ5<DotVnniEvex>>(c, r0, r1);
      return true;
    case TensorType::Q4_K:
      drive_pairs<PairQ4K, PQ4K<DotVnniEvex>>(c, r0, r1);
      return true;
    case TensorType::Q6_K:
      drive_packed<PQ6K<DotVnniEvex>>(c, r0, r1);
      return true;
    default:
      return false;
  }
}

}  // namespace hearth::ops::mm
