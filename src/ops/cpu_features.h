// CPU features detected once at run time; kernels are dispatched on them (one SIMD dispatch
// layer: AVX2+FMA+F16C, plus AVX-VNNI's int8 dot product where the CPU has it, scalar fallback
// always, room for AVX-512 and NEON).
#pragma once

#include <string>

namespace hearth::ops {

// Ordered: each level has every kernel of the levels below it. Avx2Vnni is Avx2 with the packed
// matmuls (Q8_0, Q4_0, Q5_0, Q4_K, Q6_K) on vpdpbusd over 256-bit vectors (bit-identical
// results), encoded as AVX-VNNI (VEX) or, on CPUs with AVX-512 VNNI but not AVX-VNNI (Zen 4,
// Ice Lake .. Sapphire Rapids), as AVX512-VNNI + AVX512-VL (EVEX).
enum class SimdLevel { Scalar = 0, Avx2 = 1, Avx2Vnni = 2 };

struct CpuFeatures {
  bool avx2 = false, fma = false, f16c = false, avx512f = false, avx512bw = false, avx512vl = false,
       avx512vnni = false, avxvnni = false;
  std::string summary() const;
};

const CpuFeatures& cpu_features();

// The level kernels use: the best the CPU supports, lowered by HEARTH_SIMD=scalar|avx2 (for
// tests and comparisons) or set_simd_level(). HEARTH_SIMD=avxvnni|avx512 pick the VNNI build
// (see vnni_evex) on a CPU with both.
SimdLevel simd_level();
void set_simd_level(SimdLevel level);  // clamps to what the CPU supports
const char* simd_level_name(SimdLevel level);

// At Avx2Vnni: whether the AVX-512 build of the packed kernels runs (EVEX vpdpbusd; Q8_0 on
// 512-bit vectors) — on any CPU with AVX-512 F/BW/VL/VNNI, unless HEARTH_VNNI=vex or
// set_vnni_evex(false) picks the AVX-VNNI build on a CPU with both (tests and comparisons).
// Both give the same integers, so the same results.
bool vnni_evex();
void set_vnni_evex(bool evex);  // ignored unless the CPU has both encodings

// Whether the AVX2 kernels run at the current level (never off x86-64).
inline bool use_avx2() {
#if defined(__x86_64__)
  return simd_level() >= SimdLevel::Avx2;
#else
  return false;
#endif
}

}  // namespace hearth::ops
