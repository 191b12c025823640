// Internal to the compute probe's loop files (tools/avx2, tools/avxvnni): the harness that runs one
// kernel step from registers. In an anonymous namespace: each including file is compiled for
// its own instruction set.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace hearth::tools::detail {
namespace {

template <typename V>
inline void opaque(V& v) {
  asm volatile("" : "+x"(v));
}

volatile int sink;

// Six tokens' activation bytes, broadcast four at a time from memory as the kernels do.
alignas(64) const int8_t kActs[64] = {7, -9, 11, -13, 5, 3,  -2, 1, 9,  -7, 6, -5, 4, 3, -1, 2,
                                      8, 7,  -6, 5,   4, -3, 2,  1, -9, 8,  7, 6,  5, 4, 3,  2};

inline __m256i bcast(const int8_t* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// Runs step(w, a, acc) `iters` times, the weight vector and the activation pointer made opaque
// every time (so nothing is hoisted: the activations are re-broadcast from memory, as the
// kernels do), then folds the six per-token accumulators into the sink.
template <class Step>
inline void run_int_step(int64_t iters, __m256i w, Step&& step) {
  __m256i acc[6];
  for (auto& x : acc) x = _mm256_setzero_si256();
  const int8_t* a = kActs;
  for (int64_t n = 0; n < iters; ++n) {
    opaque(w);
    asm volatile("" : "+r"(a));
    step(w, a, acc);
  }
  __m256i s = acc[0];
  for (int i = 1; i < 6; ++i) s = _mm256_xor_si256(s, acc[i]);
  sink = _mm256_cvtsi256_si32(s);
}

// The Q8_0 tile's step: per weight vector |w| once, then acc[j] = dot(acc[j], |w|, sign(a_j, w))
// for each of 6 tokens. Returns the operations done.
template <class Dot>
inline double run_sign_step(int64_t iters, Dot&& dot) {
  run_int_step(iters, _mm256_set1_epi8(-5), [&](__m256i w, const int8_t* a, __m256i* acc) {
    const __m256i aw = _mm256_sign_epi8(w, w);
#pragma GCC unroll 6
    for (int j = 0; j < 6; ++j) acc[j] = dot(acc[j], aw, _mm256_sign_epi8(bcast(a + 4 * j), w));
  });
  return static_cast<double>(iters) * 6 * 32 * 2;
}

// The nibble tiles' step: per weight vector the low and high nibbles (and, shift, and), then
// acc[j] = dot(acc[j], lo, a_j, hi, a'_j) for each of 6 tokens. Returns the operations done.
template <class Dot>
inline double run_nibble_step(int64_t iters, Dot&& dot) {
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  run_int_step(iters, _mm256_set1_epi8(0x5A), [&](__m256i w, const int8_t* a, __m256i* acc) {
    const __m256i lo = _mm256_and_si256(w, m4);
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(w, 4), m4);
#pragma GCC unroll 6
    for (int j = 0; j < 6; ++j)
      acc[j] = dot(acc[j], lo, bcast(a + 4 * j), hi, bcast(a + 32 + 4 * j));
  });
  return static_cast<double>(iters) * 6 * 64 * 2;
}

}  // namespace
}  // namespace hearth::tools::detail
