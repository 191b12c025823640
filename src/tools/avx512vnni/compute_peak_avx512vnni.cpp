// The compute probe's loops for the AVX-512 build of the packed kernels (ops/avx512vnni): the
// prefill step over two groups of rows (ops/avx512vnni/group_pairs.h), a 512-bit weight vector
// shared by 8 tokens, each token's 4 bytes broadcast from memory into one EVEX vpdpbusd.
// GCC 12's AVX-512 intrinsics pass _mm*_undefined_*() values to their builtins, which
// -Wmaybe-uninitialized and, here, -Wuninitialized report (a false positive; nothing reads
// those lanes).
#if defined(__GNUC__) && !defined(__clang__)  // GCC only; clang has no such group
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <cstdint>

#include "tools/avx2/compute_peak_steps.h"
#include "tools/compute_peak_kernels.h"

namespace hearth::tools::detail::avx512vnni {
namespace {

constexpr int kTokens = 8;  // group_pairs.h's tile

inline __m512i bcast16(const int8_t* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// As run_int_step (tools/avx2/compute_peak_steps.h) on 512-bit vectors and 8 tokens.
template <class Step>
inline void run_pair_step(int64_t iters, __m512i w, Step&& step) {
  __m512i acc[kTokens];
  for (auto& x : acc) x = _mm512_setzero_si512();
  const int8_t* a = kActs;
  for (int64_t n = 0; n < iters; ++n) {
    asm volatile("" : "+v"(w));
    asm volatile("" : "+r"(a));
    step(w, a, acc);
  }
  __m512i s = acc[0];
  for (int i = 1; i < kTokens; ++i) s = _mm512_xor_si512(s, acc[i]);
  sink = _mm256_cvtsi256_si32(_mm512_extracti64x4_epi64(s, 0));
}

}  // namespace

double peak_f32_fma(int64_t iters) {
  constexpr int kChains = 10;  // > FMA latency x pipes
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(0.001f * static_cast<float>(i));
  __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(1e-4f);
  for (int64_t n = 0; n < iters; ++n) {
    asm volatile("" : "+v"(a));
    asm volatile("" : "+v"(b));
#pragma GCC unroll 10
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  }
  __m512 s = acc[0];
  for (int i = 1; i < kChains; ++i) s = _mm512_add_ps(s, acc[i]);
  sink = static_cast<int>(_mm512_cvtss_f32(s));
  return static_cast<double>(iters) * kChains * 16 * 2;
}

// Q8_0: the weights read as w + 128 (one xor per vector), one vpdpbusd per token.
double peak_s8s8(int64_t iters) {
  const __m512i bias = _mm512_set1_epi8(static_cast<char>(0x80));
  run_pair_step(iters, _mm512_set1_epi8(-5), [&](__m512i w, const int8_t* a, __m512i* acc) {
    const __m512i u = _mm512_xor_si512(w, bias);
#pragma GCC unroll 8
    for (int j = 0; j < kTokens; ++j) acc[j] = _mm512_dpbusd_epi32(acc[j], u, bcast16(a + 4 * j));
  });
  return static_cast<double>(iters) * kTokens * 64 * 2;
}

// The nibble formats: low and high nibbles per vector (and, shift, and), two vpdpbusd per token.
double peak_u8s8(int64_t iters) {
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  run_pair_step(iters, _mm512_set1_epi8(0x5A), [&](__m512i w, const int8_t* a, __m512i* acc) {
    const __m512i lo = _mm512_and_si512(w, m4);
    const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(w, 4), m4);
#pragma GCC unroll 8
    for (int j = 0; j < kTokens; ++j)
      acc[j] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(acc[j], lo, bcast16(a + 4 * j)), hi,
                                   bcast16(a + 32 + 4 * j));
  });
  return static_cast<double>(iters) * kTokens * 128 * 2;
}

}  // namespace hearth::tools::detail::avx512vnni
