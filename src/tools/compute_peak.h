// A built-in probe of the machine's arithmetic rate, the roofline for prefill (as membw.h's
// read bandwidth is for decoding). Each figure is the rate of one matmul kernel family's inner
// step — the same instructions, as independent chains from registers on every thread of the
// pool, no memory traffic — so "% of peak" says how much of its own arithmetic limit a
// prefill reaches.
#pragma once

#include "ops/thread_pool.h"
#include "quant/types.h"

namespace hearth::tools {

struct ComputePeak {
  double f32 = 0;  // FLOP/s of FMA (F32/F16/BF16 weights; attention): 512-bit in the AVX-512 build
  // ops/s of the Q8_0 tile step: per 32 MACs sign, maddubs, madd, add (|w| once per 6 tokens)
  double s8s8 = 0;
  // ops/s of the nibble tile step (Q4_0/Q4_K/Q6_K levels): per 32 MACs maddubs, add
  double u8s8 = 0;
  // The packed kernels' steps on vpdpbusd, measured at SimdLevel::Avx2Vnni (else 0): per 32
  // MACs sign + vpdpbusd (Q8_0), and vpdpbusd alone (the nibble formats); in the AVX-512 build
  // the prefill step over two groups of rows (512-bit, one vpdpbusd per token and 64 MACs).
  double s8s8_vnni = 0;
  double u8s8_vnni = 0;
};

// Zeros when the SIMD level has no probe (scalar); each figure is the best of `reps` runs of
// about `seconds` each.
ComputePeak measure_compute_peak(ops::ThreadPool& pool, double seconds = 0.05, int reps = 3);

// The figure the kernels of weight type `w` run against (0 when none applies): the VNNI step
// where it was measured.
double compute_peak_for(const ComputePeak& peak, TensorType w);

}  // namespace hearth::tools
