// The compute probe's loops for the kernels on EVEX vpdpbusd (ops/avx512vnni/
// matmul_avx512vnni.cpp): as tools/avxvnni, in the AVX512-VNNI + VL encoding.
#include <immintrin.h>

#include <cstdint>

#include "tools/avx2/compute_peak_steps.h"
#include "tools/compute_peak_kernels.h"

namespace hearth::tools::detail::avx512vnni {

double peak_s8s8(int64_t iters) {
  return run_sign_step(
      iters, [](__m256i acc, __m256i aw, __m256i sa) { return _mm256_dpbusd_epi32(acc, aw, sa); });
}

double peak_u8s8(int64_t iters) {
  return run_nibble_step(iters, [](__m256i acc, __m256i lo, __m256i alo, __m256i hi, __m256i ahi) {
    return _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(acc, lo, alo), hi, ahi);
  });
}

}  // namespace hearth::tools::detail::avx512vnni
