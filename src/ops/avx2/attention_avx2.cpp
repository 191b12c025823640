// AVX2+FMA fused attention task (see attention_kernels.h for the reduction order it keeps).
// Per tile of 32 KV positions, K and V rows are decoded once into f32 (F16 via F16C, Q8_0 via
// d*q exactly like the reference dequantizer; F32 rows are read in place) and shared by every
// query vector of the task: the GQA group's heads times up to kAttnQueryRows query rows.
// Scores come from a 3x4 (queries x keys) register-blocked kernel, P*V from a 3x4 (queries x
// 8-wide column chunks) one; blocking changes only which values share registers, never the
// sequence of operations that produces any one value.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "ops/attention_kernels.h"
#include "ops/elementwise_avx2_math.h"
#include "quant/blocks.h"
#include "quant/half.h"

namespace hearth::ops::detail::avx2 {
namespace {

using ops::avx2::exp_ps;
using ops::avx2::hmax_ps;
using ops::avx2::hsum_ps;

constexpr int64_t T = kAttnTile;

float* thread_scratch(size_t n) {
  thread_local std::vector<float> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

// Decodes n elements of an encoded row to f32 (or returns the row itself for F32).
const float* decode_row(TensorType type, const uint8_t* src, float* dst, int64_t n) {
  if (type == TensorType::F32) return reinterpret_cast<const float*>(src);
  if (type == TensorType::F16) {
    for (int64_t i = 0; i < n; i += 8)
      _mm256_storeu_ps(
          dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i))));
    return dst;
  }
  // Q8_0: 34-byte blocks, x = q * d (float multiply, as the reference dequantizer).
  for (int64_t b = 0; b < n / kQK; ++b) {
    const uint8_t* blk = src + b * static_cast<int64_t>(sizeof(BlockQ8_0));
    uint16_t dbits;
    std::memcpy(&dbits, blk, 2);
    const __m256 d = _mm256_set1_ps(f16_to_f32(dbits));
    const uint8_t* qs = blk + 2;
    for (int k = 0; k < kQK; k += 8) {
      const __m128i q8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(qs + k));
      const __m256 qf = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8));
      _mm256_storeu_ps(dst + b * kQK + k, _mm256_mul_ps(qf, d));
    }
  }
  return dst;
}

// s[m*T + n] = dot(q[m], k[n]) * scale for MB query vectors and 4 keys. Each dot is one
// 8-lane FMA chain over head_dim in order, reduced by hsum_ps.
template <int MB>
inline void qk_block(const float* const* q, const float* const* k, int64_t hd, float scale,
                     float* s) {
  __m256 acc[MB][4];
  for (int m = 0; m < MB; ++m)
    for (int n = 0; n < 4; ++n) acc[m][n] = _mm256_setzero_ps();
  for (int64_t c = 0; c < hd; c += 8) {
    const __m256 k0 = _mm256_loadu_ps(k[0] + c), k1 = _mm256_loadu_ps(k[1] + c);
    const __m256 k2 = _mm256_loadu_ps(k[2] + c), k3 = _mm256_loadu_ps(k[3] + c);
    for (int m = 0; m < MB; ++m) {
      const __m256 qv = _mm256_loadu_ps(q[m] + c);
      acc[m][0] = _mm256_fmadd_ps(qv, k0, acc[m][0]);
      acc[m][1] = _mm256_fmadd_ps(qv, k1, acc[m][1]);
      acc[m][2] = _mm256_fmadd_ps(qv, k2, acc[m][2]);
      acc[m][3] = _mm256_fmadd_ps(qv, k3, acc[m][3]);
    }
  }
  for (int m = 0; m < MB; ++m)
    for (int n = 0; n < 4; ++n) s[m * T + n] = hsum_ps(acc[m][n]) * scale;
}

// o[m][c0 .. c0 + 8*CB) = o*alpha[m] + sum_{j < jn} p[m*T + j] * v[j], j in order.
template <int MB, int CB>
inline void pv_block(float* const* o, const float* alpha, const float* p, const float* const* v,
                     int64_t jn, int64_t c0) {
  __m256 acc[MB][CB];
  for (int m = 0; m < MB; ++m) {
    const __m256 a = _mm256_set1_ps(alpha[m]);
    for (int c = 0; c < CB; ++c) acc[m][c] = _mm256_mul_ps(_mm256_loadu_ps(o[m] + c0 + 8 * c), a);
  }
  for (int64_t j = 0; j < jn; ++j) {
    __m256 vv[CB];
    for (int c = 0; c < CB; ++c) vv[c] = _mm256_loadu_ps(v[j] + c0 + 8 * c);
    for (int m = 0; m < MB; ++m) {
      const __m256 pb = _mm256_broadcast_ss(p + m * T + j);
      for (int c = 0; c < CB; ++c) acc[m][c] = _mm256_fmadd_ps(pb, vv[c], acc[m][c]);
    }
  }
  for (int m = 0; m < MB; ++m)
    for (int c = 0; c < CB; ++c) _mm256_storeu_ps(o[m] + c0 + 8 * c, acc[m][c]);
}

template <int MB>
inline void pv_rows(float* const* o, const float* alpha, const float* p, const float* const* v,
                    int64_t jn, int64_t hd) {
  int64_t c0 = 0;
  for (; c0 + 32 <= hd; c0 += 32) pv_block<MB, 4>(o, alpha, p, v, jn, c0);
  switch ((hd - c0) / 8) {
    case 3:
      pv_block<MB, 3>(o, alpha, p, v, jn, c0);
      break;
    case 2:
      pv_block<MB, 2>(o, alpha, p, v, jn, c0);
      break;
    case 1:
      pv_block<MB, 1>(o, alpha, p, v, jn, c0);
      break;
    default:
      break;
  }
}

// Online-softmax update of one query vector's state with its T-wide score row (entries at or
// beyond `valid` are set to -inf here). Leaves p_j in s, returns alpha.
inline float softmax_tile(float* s, int64_t valid, float& mx, float& l) {
  const float kNegInf = -std::numeric_limits<float>::infinity();
  for (int64_t j = valid; j < T; ++j) s[j] = kNegInf;
  __m256 v[T / 8];
  __m256 vmax = _mm256_set1_ps(kNegInf);
  for (int i = 0; i < T / 8; ++i) {
    v[i] = _mm256_loadu_ps(s + 8 * i);
    vmax = _mm256_max_ps(vmax, v[i]);
  }
  const float m_new = std::max(mx, hmax_ps(vmax));
  const float alpha = mx == kNegInf ? 0.0f : _mm256_cvtss_f32(exp_ps(_mm256_set1_ps(mx - m_new)));
  const __m256 mv = _mm256_set1_ps(m_new);
  __m256 sum = _mm256_setzero_ps();
  for (int i = 0; i < T / 8; ++i) {
    const __m256 e = exp_ps(_mm256_sub_ps(v[i], mv));
    _mm256_storeu_ps(s + 8 * i, e);
    sum = _mm256_add_ps(sum, e);
  }
  // l*alpha + sum as one explicit FMA (never left to the compiler's contraction choices).
  l = _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(l), _mm_set_ss(alpha), _mm_set_ss(hsum_ps(sum))));
  mx = m_new;
  return alpha;
}

}  // namespace

void attention_task(const AttnTask& t) {
  const KvSeqView& kv = *t.kv;
  const TensorType type = kv.layout.type;
  const int64_t hd = t.head_dim, G = t.group, M = t.n_rows * G;
  const auto uhd = static_cast<size_t>(hd), uT = static_cast<size_t>(T);
  const auto uM = static_cast<size_t>(M);
  float* kt = thread_scratch(2 * uT * uhd + uM * (uT + uhd + 3));
  float* vt = kt + uT * uhd;
  float* s = vt + uT * uhd;  // [M][T] scores, then probabilities
  float* o = s + uM * uT;    // [M][hd] unnormalised outputs
  float* mx = o + uM * uhd;
  float* l = mx + uM;
  float* alpha = l + uM;
  const float kNegInf = -std::numeric_limits<float>::infinity();
  std::fill(o, o + uM * uhd, 0.0f);
  std::fill(mx, mx + uM, kNegInf);
  std::fill(l, l + uM, 0.0f);

  // Per query vector: its q and o rows.
  std::vector<const float*> qp(uM);
  std::vector<float*> op(uM);
  for (int64_t m = 0; m < M; ++m) {
    qp[static_cast<size_t>(m)] = t.q + (m / G) * t.row_stride + (m % G) * hd;
    op[static_cast<size_t>(m)] = o + m * hd;
  }
  const float* krow[T];
  const float* vrow[T];

  const int64_t p_last = t.pos_first + t.n_rows - 1;
  for (int64_t j0 = 0; j0 <= p_last; j0 += T) {
    const int64_t jn = std::min(T, p_last + 1 - j0);
    for (int64_t j = 0; j < jn; ++j)
      krow[j] = decode_row(type, kv_row(t, kv.k_blocks, j0 + j), kt + j * hd, hd);
    for (int64_t j = jn; j < T; ++j) krow[j] = krow[0];  // padding, scores discarded

    // Query vectors whose position is >= j0 take part in this tile.
    const int64_t m_begin = std::max<int64_t>(0, j0 - t.pos_first) * G;
    for (int64_t n0 = 0; n0 < jn; n0 += 4) {
      int64_t m = m_begin;
      for (; m + 3 <= M; m += 3)
        qk_block<3>(&qp[static_cast<size_t>(m)], krow + n0, hd, t.scale, s + m * T + n0);
      if (M - m == 2)
        qk_block<2>(&qp[static_cast<size_t>(m)], krow + n0, hd, t.scale, s + m * T + n0);
      if (M - m == 1)
        qk_block<1>(&qp[static_cast<size_t>(m)], krow + n0, hd, t.scale, s + m * T + n0);
    }
    for (int64_t m = m_begin; m < M; ++m) {
      const int64_t valid = std::min(jn, t.pos_first + m / G - j0 + 1);
      alpha[m] = softmax_tile(s + m * T, valid, mx[m], l[m]);
    }

    for (int64_t j = 0; j < jn; ++j)
      vrow[j] = decode_row(type, kv_row(t, kv.v_blocks, j0 + j), vt + j * hd, hd);
    // Vectors that see every position of the tile go through the blocked kernel; the others
    // (the diagonal) one at a time with their own end. Same operation sequence either way.
    const int64_t r_full = std::clamp<int64_t>(j0 + jn - 1 - t.pos_first, 0, t.n_rows);
    const int64_t m_full = std::max(m_begin, r_full * G);
    for (int64_t m = m_begin; m < m_full; ++m) {
      const int64_t valid = std::min(jn, t.pos_first + m / G - j0 + 1);
      pv_rows<1>(&op[static_cast<size_t>(m)], alpha + m, s + m * T, vrow, valid, hd);
    }
    int64_t m = m_full;
    for (; m + 3 <= M; m += 3)
      pv_rows<3>(&op[static_cast<size_t>(m)], alpha + m, s + m * T, vrow, jn, hd);
    if (M - m == 2) pv_rows<2>(&op[static_cast<size_t>(m)], alpha + m, s + m * T, vrow, jn, hd);
    if (M - m == 1) pv_rows<1>(&op[static_cast<size_t>(m)], alpha + m, s + m * T, vrow, jn, hd);
  }
  for (int64_t m = 0; m < M; ++m) {
    const __m256 inv = _mm256_set1_ps(1.0f / l[m]);
    float* out = t.out + (m / G) * t.row_stride + (m % G) * hd;
    for (int64_t i = 0; i < hd; i += 8)
      _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_loadu_ps(o + m * hd + i), inv));
  }
}

}  // namespace hearth::ops::detail::avx2
