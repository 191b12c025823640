// The packed kernels (ops/avx2/packed_matmul.h) on vpdpbusd in its AVX512-VNNI + AVX512-VL
// encoding (EVEX, still on 256-bit vectors): the VNNI path for CPUs that have AVX-512 VNNI but
// not AVX-VNNI (AMD Zen 4, Intel Ice Lake to Sapphire Rapids). Compiled with -mavx2 -mfma -mf16c
// -mavx512f -mavx512vl -mavx512vnni; called only at SimdLevel::Avx2Vnni when ops::vnni_evex().
// The same instruction as ops/avxvnni/matmul_avxvnni.cpp in another encoding: the same exact
// int32 sums, so every result is bit-identical to the AVX2 and AVX-VNNI kernels'.
#include <immintrin.h>

#include "ops/avx2/kernel_helpers.h"
#include "ops/avx2/packed_matmul.h"
#include "ops/matmul_kernels.h"

namespace hearth::ops::mm {
namespace {

struct DotVnniEvex {
  static constexpr bool kWideAccumulate = true;
  static MM_INLINE __m256i dot4(__m256i acc, __m256i u, __m256i s) {
    return _mm256_dpbusd_epi32(acc, u, s);
  }
};

}  // namespace

bool rows_avx512vnni(const MatrixView& w, const Acts& x, float* y, int64_t y_stride, int64_t r0,
                     int64_t r1) {
  if (w.packed == nullptr) return false;
  const Ctx c{w, x, y, y_stride};
  switch (w.type) {
    case TensorType::Q8_0:
      drive_packed<PQ8<DotVnniEvex>>(c, r0, r1);
      return true;
    case TensorType::Q4_0:
      drive_packed<PQ4<DotVnniEvex>>(c, r0, r1);
      return true;
    case TensorType::Q5_0:
      drive_packed<PQ5<DotVnniEvex>>(c, r0, r1);
      return true;
    case TensorType::Q4_K:
      drive_packed<PQ4K<DotVnniEvex>>(c, r0, r1);
      return true;
    case TensorType::Q6_K:
      drive_packed<PQ6K<DotVnniEvex>>(c, r0, r1);
      return true;
    default:
      return false;
  }
}

}  // namespace hearth::ops::mm
