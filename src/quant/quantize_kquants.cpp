// Quantizers for the 256-element K-quant super-blocks. Each sub-block gets its own scale (and
// min), found by a small grid search over candidate scales with a least-squares refit of each
// candidate's levels; the sub-block scales are then quantized against one f16 super-scale, and
// the final levels are recomputed with the scales the dequantizer will actually use.
// Cost per element is a fixed handful of vectorizable passes (no per-element search).
#include <cmath>

#include "quant/half.h"
#include "quant/quantize_kernels.h"

namespace hearth::detail {
namespace {

constexpr int kLanes = 4;  // independent partial sums: one SIMD register per accumulator

// min(max(v, lo), hi) without comparisons: under strict IEEE flags GCC will not if-convert a
// float select, and the branches would keep the search loop from vectorizing. Equals the exact
// clamp up to an ulp of |lo|, |hi| (irrelevant here: the result is only rounded to a level).
inline float clamp_arith(float v, float lo, float hi) {
  v = 0.5f * ((v + lo) + std::fabs(v - lo));
  return 0.5f * ((v + hi) - std::fabs(v - hi));
}

// Levels l = round(clamp(iscale * (x - x0), lo, hi)) of one candidate and their sums.
struct LevelSums {
  float l = 0, l2 = 0, xl = 0;  // sum l, sum l*l, sum x*l
};

template <int kN>
LevelSums level_sums(const float* x, float x0, float iscale, float lo, float hi) {
  static_assert(kN % kLanes == 0);
  float sl[kLanes] = {}, sl2[kLanes] = {}, sxl[kLanes] = {};
  // Fully unrolled, the lanes map straight onto SIMD registers (otherwise GCC vectorizes the
  // outer loop with costly shuffles).
#pragma GCC unroll 16
  for (int i = 0; i < kN; i += kLanes) {
    for (int k = 0; k < kLanes; ++k) {
      const float l = round_even(clamp_arith(iscale * (x[i + k] - x0), lo, hi));
      sl[k] += l;
      sl2[k] += l * l;
      sxl[k] += l * x[i + k];
    }
  }
  LevelSums s;
  for (int k = 0; k < kLanes; ++k) {
    s.l += sl[k];
    s.l2 += sl2[k];
    s.xl += sxl[k];
  }
  return s;
}

// x ~ scale * l + off with off <= 0 (so x = 0 stays reachable: K-quant mins are subtracted).
struct AffineFit {
  float scale = 0, off = 0;
  float err = INFINITY;  // sum (scale*l + off - x)^2 minus the constant sum x^2
};

// Least-squares (scale, off) for fixed levels; false if the levels cannot determine a scale.
template <int kN>
bool fit_affine(const LevelSums& s, float sx, AffineFit& f) {
  const float n = kN;
  const float det = n * s.l2 - s.l * s.l;
  if (!(det > 0)) return false;
  float scale = (n * s.xl - sx * s.l) / det;
  float off = (s.l2 * sx - s.l * s.xl) / det;
  if (off > 0) {  // constrained optimum on the boundary off = 0
    off = 0;
    scale = s.xl / s.l2;
  }
  if (!(scale > 0)) return false;
  f.scale = scale;
  f.off = off;
  f.err = scale * scale * s.l2 + off * off * n + 2 * scale * off * s.l - 2 * scale * s.xl -
          2 * off * sx;
  return true;
}

// Fits x ~ scale * l - mn, integer l in [0, nmax], scale >= 0, mn >= 0. Candidate inverse
// scales (nmax + rmin + rdelta * i) / (max - min), i = 0..nstep, map [min, max] onto a little
// less or more than the level range; each is refit, the best then refined by re-leveling with
// its own (scale, off) while that helps.
template <int kN>
float fit_scale_min(const float* x, int nmax, float rmin, float rdelta, int nstep, float& mn) {
  float lo = x[0], hi = x[0], sx = 0;
  for (int i = 0; i < kN; ++i) {
    lo = std::fmin(lo, x[i]);
    hi = std::fmax(hi, x[i]);
    sx += x[i];
  }
  if (lo > 0) lo = 0;
  if (!(hi > lo)) {  // constant block (or NaN): all levels 0, value = -mn
    mn = -lo;
    return 0.0f;
  }
  const float top = static_cast<float>(nmax);
  const float range = hi - lo;
  AffineFit best;
  best.scale = range / top;
  best.off = lo;
  for (int is = 0; is <= nstep; ++is) {
    const float iscale = (top + rmin + rdelta * static_cast<float>(is)) / range;
    AffineFit f;
    if (fit_affine<kN>(level_sums<kN>(x, lo, iscale, 0, top), sx, f) && f.err < best.err) best = f;
  }
  for (int iter = 0; iter < 2 && best.err < INFINITY; ++iter) {
    AffineFit f;
    if (!fit_affine<kN>(level_sums<kN>(x, best.off, 1 / best.scale, 0, top), sx, f) ||
        !(f.err < best.err))
      break;
    best = f;
  }
  mn = -best.off;
  return best.scale;
}

// Fits x ~ scale * l, integer l in [-nmax, nmax - 1]; the scale's sign puts the extra negative
// level on the largest-magnitude value. Candidates -(nmax + 0.4 i) / max, i = -2..2, each with
// its least-squares scale; keeps the one explaining the most energy (xl^2 / l2).
template <int kN>
float fit_scale_symmetric(const float* x, int nmax) {
  float amax = 0, mx = 0;
  for (int i = 0; i < kN; ++i) {
    const float a = std::fabs(x[i]);
    if (a > amax) {
      amax = a;
      mx = x[i];
    }
  }
  if (!(amax > 1e-30f)) return 0.0f;
  const float lo = -static_cast<float>(nmax), hi = static_cast<float>(nmax - 1);
  float best_scale = 0, best = -1;
  for (int is = -2; is <= 2; ++is) {
    const float iscale = -(static_cast<float>(nmax) + 0.4f * static_cast<float>(is)) / mx;
    const LevelSums s = level_sums<kN>(x, 0, iscale, lo, hi);
    if (!(s.l2 > 0)) continue;
    const float gain = s.xl * s.xl / s.l2;
    if (gain > best) {
      best = gain;
      best_scale = s.xl / s.l2;
    }
  }
  return best_scale;
}

// Shared by Q4_K and Q5_K: 8 sub-blocks of 32 with a 6-bit scale and a 6-bit min each.
// Writes d/dmin/scales and the levels L[256] in [0, nmax].
template <int kNmax>
void quantize_kquant_affine(const float* x, float rmin, float rdelta, int nstep, uint16_t& dh,
                            uint16_t& dminh, uint8_t* packed_scales, int* L) {
  constexpr int kSub = 32, kNsub = kQKK / kSub;
  float scales[kNsub], mins[kNsub];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < kNsub; ++j) {
    scales[j] = fit_scale_min<kSub>(x + kSub * j, kNmax, rmin, rdelta, nstep, mins[j]);
    max_scale = std::fmax(max_scale, scales[j]);
    max_min = std::fmax(max_min, mins[j]);
  }
  dh = scale_to_f16_up(max_scale / 63.0f);
  dminh = scale_to_f16_up(max_min / 63.0f);
  const float d = f16_to_f32(dh), dmin = f16_to_f32(dminh);
  const float id = d > 0 ? 1.0f / d : 0.0f, idmin = dmin > 0 ? 1.0f / dmin : 0.0f;
  uint8_t ls[kNsub], lm[kNsub];
  for (int j = 0; j < kNsub; ++j) {
    ls[j] = static_cast<uint8_t>(quant_int(scales[j] * id, 0, 63));
    lm[j] = static_cast<uint8_t>(quant_int(mins[j] * idmin, 0, 63));
  }
  kquant_pack_scale_mins(ls, lm, packed_scales);
  for (int j = 0; j < kNsub; ++j) {
    const float dl = d * static_cast<float>(ls[j]);
    const float dm = dmin * static_cast<float>(lm[j]);
    const float idl = dl > 0 ? 1.0f / dl : 0.0f;
    for (int i = 0; i < kSub; ++i)
      L[kSub * j + i] = quant_int((x[kSub * j + i] + dm) * idl, 0, kNmax);
  }
}

}  // namespace

BlockQ4_K quantize_block_q4_k(const float* x) {
  int L[kQKK];
  BlockQ4_K b{};
  quantize_kquant_affine<15>(x, -1.0f, 0.4f, 5, b.d, b.dmin, b.scales, L);
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l)
      b.qs[32 * c + l] = static_cast<uint8_t>(L[64 * c + l] | (L[64 * c + 32 + l] << 4));
  return b;
}

BlockQ5_K quantize_block_q5_k(const float* x) {
  int L[kQKK];
  BlockQ5_K b{};
  quantize_kquant_affine<31>(x, -0.5f, 0.4f, 4, b.d, b.dmin, b.scales, L);
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) {
      const int lo = L[64 * c + l], hi = L[64 * c + 32 + l];
      b.qs[32 * c + l] = static_cast<uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
      b.qh[l] = static_cast<uint8_t>(b.qh[l] | ((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
    }
  }
  return b;
}

BlockQ6_K quantize_block_q6_k(const float* x) {
  constexpr int kSub = 16, kNsub = kQKK / kSub;
  float scales[kNsub];
  float max_scale = 0, max_abs = 0;
  for (int j = 0; j < kNsub; ++j) {
    scales[j] = fit_scale_symmetric<kSub>(x + kSub * j, 32);
    if (std::fabs(scales[j]) > max_abs) {
      max_abs = std::fabs(scales[j]);
      max_scale = scales[j];
    }
  }
  BlockQ6_K b{};
  // The largest-magnitude scale maps to -128 (int8 has one more negative value). An all-zero
  // block keeps d = 0 and every level at 32 (= 0).
  b.d = scale_to_f16_up(max_scale / -128.0f);
  const float d = f16_to_f32(b.d);
  const float id = d != 0 ? 1.0f / d : 0.0f;
  int L[kQKK];
  for (int j = 0; j < kNsub; ++j) {
    b.scales[j] = static_cast<int8_t>(quant_int(scales[j] * id, -128, 127));
    const float dl = d * static_cast<float>(b.scales[j]);
    const float idl = dl != 0 ? 1.0f / dl : 0.0f;
    for (int i = 0; i < kSub; ++i) L[kSub * j + i] = quant_int(x[kSub * j + i] * idl, -32, 31) + 32;
  }
  for (int h = 0; h < 2; ++h) {
    for (int l = 0; l < 32; ++l) {
      const int* q = L + 128 * h + l;
      b.ql[64 * h + l] = static_cast<uint8_t>((q[0] & 0xF) | ((q[64] & 0xF) << 4));
      b.ql[64 * h + 32 + l] = static_cast<uint8_t>((q[32] & 0xF) | ((q[96] & 0xF) << 4));
      b.qh[32 * h + l] = static_cast<uint8_t>((q[0] >> 4) | ((q[32] >> 4) << 2) |
                                              ((q[64] >> 4) << 4) | ((q[96] >> 4) << 6));
    }
  }
  return b;
}

BlockQ8_K quantize_block_q8_k(const float* x) {
  float amax = 0, mx = 0;
  for (int i = 0; i < kQKK; ++i) {
    const float a = std::fabs(x[i]);
    if (a > amax) {
      amax = a;
      mx = x[i];
    }
  }
  BlockQ8_K b{};
  if (amax == 0) return b;
  // Largest magnitude -> -127; levels stay in [-127, 127].
  const float iscale = -127.0f / mx;
  for (int i = 0; i < kQKK; ++i) b.qs[i] = static_cast<int8_t>(quant_int(iscale * x[i], -127, 127));
  for (int g = 0; g < kQKK / 16; ++g) {
    int s = 0;
    for (int i = 0; i < 16; ++i) s += b.qs[16 * g + i];
    b.bsums[g] = static_cast<int16_t>(s);
  }
  b.d = 1.0f / iscale;
  return b;
}

}  // namespace hearth::detail
