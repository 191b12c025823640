// Internal: the per-ISA loops of the compute probe (compute_peak.cpp); each runs `iters`
// iterations and returns the operations done (2 per multiply-add).
#pragma once

#include <cstdint>

namespace hearth::tools::detail::avx2 {

double peak_f32_fma(int64_t iters);
double peak_s8s8(int64_t iters);
double peak_u8s8(int64_t iters);

}  // namespace hearth::tools::detail::avx2

namespace hearth::tools::detail::avxvnni {

double peak_s8s8(int64_t iters);
double peak_u8s8(int64_t iters);

}  // namespace hearth::tools::detail::avxvnni

namespace hearth::tools::detail::avx512vnni {

double peak_f32_fma(int64_t iters);  // 512-bit FMA (the AVX-512 build's float prefill)
double peak_s8s8(int64_t iters);
double peak_u8s8(int64_t iters);

}  // namespace hearth::tools::detail::avx512vnni
