// The packed kernels (ops/avx2/packed_matmul.h) on AVX-VNNI's vpdpbusd: one instruction for the
// four u8 × s8 products and their add into an int32 lane, where AVX2 needs vpmaddubsw +
// vpmaddwd + vpaddd (or int16 step sums that a vpmaddwd widens). Compiled with -mavx2 -mfma -mf16c
// -mavxvnni; called only at SimdLevel::Avx2Vnni. vpdpbusd does not saturate and the int32 sums are
// exact, so every result is bit-identical to the AVX2 kernel's: the level changes speed, never an
// output.
#include <immintrin.h>

#include "ops/avx2/kernel_helpers.h"
#include "ops/avx2/packed_matmul.h"
#include "ops/matmul_kernels.h"

namespace hearth::ops::mm {
namespace {

struct DotVnni {
  static constexpr bool kWideAccumulate = true;
  static MM_INLINE __m256i dot4(__m256i acc, __m256i u, __m256i s) {
    return _mm256_dpbusd_avx_epi32(acc, u, s);
  }
};

}  // namespace

bool rows_avxvnni(const MatrixView& w, const Acts& x, float* y, int64_t y_stride, int64_t r0,
                  int64_t r1) {
  if (w.packed == nullptr) return false;
  const Ctx c{w, x, y, y_stride};
  switch (w.type) {
    case TensorType::Q8_0:
      drive_packed<PQ8<DotVnni>>(c, r0, r1);
      return true;
    case TensorType::Q4_0:
      drive_packed<PQ4<DotVnni>>(c, r0, r1);
      return true;
    case TensorType::Q5_0:
      drive_packed<PQ5<DotVnni>>(c, r0, r1);
      return true;
    case TensorType::Q4_K:
      drive_packed<PQ4K<DotVnni>>(c, r0, r1);
      return true;
    case TensorType::Q6_K:
      drive_packed<PQ6K<DotVnni>>(c, r0, r1);
      return true;
    default:
      return false;
  }
}

}  // namespace hearth::ops::mm
