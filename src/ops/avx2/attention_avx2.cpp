// AVX2+FMA fused attention task (see attention_kernels.h for the reduction order it keeps).
// A task's query vectors (the GQA group's heads times up to kAttnQueryRows query rows) share
// every K/V tile. With few of them (decode) the kernels read the encoded rows directly,
// widening F16 with F16C and Q8_0 / Q4_0 as q * d; with more (prefill) each tile's rows are first
// decoded once into an f32 buffer that every query block then reads. Both produce exactly the
// f32 values of the reference dequantizer, and scores and P*V come from register-blocked
// kernels whose blocking changes only which values share registers, never the sequence of
// operations that produces any one value - so the path taken does not change a bit.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>
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

// Decodes n elements of an encoded row to f32 into dst. F32 rows are copied too: rows of one
// head sit a whole token apart (often a multiple of 4 KiB), which makes reading them in place
// thrash a few L1 sets.
const float* decode_row(TensorType type, const uint8_t* src, float* dst, int64_t n) {
  if (type == TensorType::F32) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
    return dst;
  }
  if (type == TensorType::F16) {
    for (int64_t i = 0; i < n; i += 8)
      _mm256_storeu_ps(
          dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i))));
    return dst;
  }
  if (type == TensorType::Q4_0) {
    // 18-byte blocks: element j < 16 the low nibble of qs[j], j + 16 its high nibble;
    // x = (q - 8) * d (the integer exact in float, one rounding, as the reference dequantizer).
    const __m128i mask = _mm_set1_epi8(0x0F);
    const __m256i eight = _mm256_set1_epi32(8);
    for (int64_t b = 0; b < n / kQK; ++b) {
      const uint8_t* blk = src + b * static_cast<int64_t>(sizeof(BlockQ4_0));
      uint16_t dbits;
      std::memcpy(&dbits, blk, 2);
      const __m256 d = _mm256_set1_ps(_cvtsh_ss(dbits));
      const __m128i qs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2));
      const __m128i lo = _mm_and_si128(qs, mask), hi = _mm_and_si128(_mm_srli_epi16(qs, 4), mask);
      const __m128i parts[4] = {lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8)};
      for (int k = 0; k < 4; ++k) {
        const __m256i q = _mm256_sub_epi32(_mm256_cvtepu8_epi32(parts[k]), eight);
        _mm256_storeu_ps(dst + b * kQK + 8 * k, _mm256_mul_ps(_mm256_cvtepi32_ps(q), d));
      }
    }
    return dst;
  }
  // Q8_0: 34-byte blocks, x = q * d (float multiply, as the reference dequantizer).
  for (int64_t b = 0; b < n / kQK; ++b) {
    const uint8_t* blk = src + b * static_cast<int64_t>(sizeof(BlockQ8_0));
    uint16_t dbits;
    std::memcpy(&dbits, blk, 2);
    const __m256 d = _mm256_set1_ps(_cvtsh_ss(dbits));
    const uint8_t* qs = blk + 2;
    for (int k = 0; k < kQK; k += 8) {
      const __m128i q8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(qs + k));
      const __m256 qf = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8));
      _mm256_storeu_ps(dst + b * kQK + k, _mm256_mul_ps(qf, d));
    }
  }
  return dst;
}

// Row readers: 8 elements at column c of an encoded row, as f32 - exactly the values
// decode_row writes, so reading rows directly or through the decoded tile gives the same bits.
struct F32Rows {
  static __m256 load(const uint8_t* row, int64_t c) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + c);
  }
};
struct F16Rows {
  static __m256 load(const uint8_t* row, int64_t c) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * c)));
  }
};
struct Q8Rows {
  static __m256 load(const uint8_t* row, int64_t c) {
    const uint8_t* blk = row + (c / kQK) * static_cast<int64_t>(sizeof(BlockQ8_0));
    uint16_t dbits;
    std::memcpy(&dbits, blk, 2);
    const __m128i q8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk + 2 + c % kQK));
    // F16C widening of the scale: exact, like f16_to_f32, without its 256 KiB table.
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8)),
                         _mm256_set1_ps(_cvtsh_ss(dbits)));
  }
};

struct Q4Rows {
  static __m256 load(const uint8_t* row, int64_t c) {
    const uint8_t* blk = row + (c / kQK) * static_cast<int64_t>(sizeof(BlockQ4_0));
    const int64_t k = c % kQK;  // 0, 8: low nibbles of qs[k..k+7]; 16, 24: high of qs[k-16..]
    uint16_t dbits;
    std::memcpy(&dbits, blk, 2);
    __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk + 2 + k % 16));
    q = _mm_and_si128(k < 16 ? q : _mm_srli_epi16(q, 4), _mm_set1_epi8(0x0F));
    const __m256i qi = _mm256_sub_epi32(_mm256_cvtepu8_epi32(q), _mm256_set1_epi32(8));
    return _mm256_mul_ps(_mm256_cvtepi32_ps(qi), _mm256_set1_ps(_cvtsh_ss(dbits)));
  }
};

// Software prefetch of encoded rows, kPrefetchTiles tiles ahead: each row decoded prefetches the
// row at the same place in that tile, which keeps a steady number of lines in flight. Into L2 (T1):
// prefetching into L1 (T0) ties up the L1 miss buffers and measured 2x slower; in token-major
// blocks a head's rows are a strided walk that the hardware prefetchers barely follow, so
// without software prefetch decode reads K/V at a third of the rate.
#ifndef HEARTH_ATTN_PREFETCH_TILES
#define HEARTH_ATTN_PREFETCH_TILES 1  // measured best (2 and 4 slower)
#endif
constexpr int64_t kPrefetchTiles = HEARTH_ATTN_PREFETCH_TILES;

inline void prefetch_row(const uint8_t* row, int64_t bytes) {
  const char* p = reinterpret_cast<const char*>(row);
  for (int64_t off = 0; off < bytes; off += 64) _mm_prefetch(p + off, _MM_HINT_T1);
  _mm_prefetch(p + bytes - 1, _MM_HINT_T1);
}

// Encoded K and V rows of positions [j0, j0 + n) of the task's head (one division per tile).
inline void tile_rows(const AttnTask& t, int64_t j0, int64_t n, const uint8_t** k,
                      const uint8_t** v) {
  const KvSeqView& kv = *t.kv;
  const int64_t bt = kv.layout.block_tokens;
  int64_t b = j0 / bt, slot = j0 % bt;
  for (int64_t i = 0; i < n; ++i) {
    const size_t off = t.head_major ? static_cast<size_t>(t.kv_head * bt + slot) * t.head_bytes
                                    : static_cast<size_t>(slot) * t.token_bytes +
                                          static_cast<size_t>(t.kv_head) * t.head_bytes;
    k[i] = kv.k_blocks[b] + off;
    v[i] = kv.v_blocks[b] + off;
    if (++slot == bt) {
      slot = 0;
      ++b;
    }
  }
}

// Register blocking. Blocks of up to kMaxMb query vectors. With 3 or more, scores take 2 keys
// per pass (key chunks in registers, query chunks streamed) and P*V 2 column chunks of 8 (V
// chunks in registers, probabilities broadcast). With 1 or 2 (decode: one query row, a small
// GQA group) there are too few independent FMA chains for that, so scores take 8/MB keys and
// P*V 8/MB column chunks per pass instead.
constexpr int kMaxMb = 6;

// Lane sums of 4 vectors, each reduced exactly as hsum_ps reduces one.
inline __m128 hsum4_ps(__m256 a, __m256 b, __m256 c, __m256 d) {
  const __m256 ab = _mm256_hadd_ps(a, b);  // a01 a23 b01 b23 | a45 a67 b45 b67
  const __m256 cd = _mm256_hadd_ps(c, d);
  const __m256 t = _mm256_hadd_ps(ab, cd);  // a0123 b0123 c0123 d0123 | a4567 ...
  return _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
}
inline __m128 hsum2_ps(__m256 a, __m256 b) {
  __m256 t = _mm256_hadd_ps(a, b);
  t = _mm256_hadd_ps(t, t);  // a0123 b0123 a0123 b0123 | a4567 b4567 ...
  return _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
}

// s[m*T + n] = dot(q[m], k[n]) * scale for MB query vectors and NB keys. Each dot is one
// 8-lane FMA chain over head_dim in order, reduced as hsum_ps does.
template <class Rows, int MB, int NB>
inline void qk_block(const float* const* q, const uint8_t* const* k, int64_t hd, float scale,
                     float* s) {
  static_assert(NB == 2 || NB % 4 == 0);
  __m256 acc[MB][NB];
#pragma GCC unroll 16
  for (int m = 0; m < MB; ++m)
#pragma GCC unroll 16
    for (int n = 0; n < NB; ++n) acc[m][n] = _mm256_setzero_ps();
  for (int64_t c = 0; c < hd; c += 8) {
    if constexpr (MB >= 3) {  // keys in registers, queries streamed
      __m256 kv[NB];
#pragma GCC unroll 16
      for (int n = 0; n < NB; ++n) kv[n] = Rows::load(k[n], c);
#pragma GCC unroll 16
      for (int m = 0; m < MB; ++m) {
        __m256 qv = _mm256_loadu_ps(q[m] + c);
        asm("" : "+x"(qv));  // one load, not one folded into each FMA
#pragma GCC unroll 16
        for (int n = 0; n < NB; ++n) acc[m][n] = _mm256_fmadd_ps(qv, kv[n], acc[m][n]);
      }
    } else {  // queries in registers, keys streamed
      __m256 qv[MB];
#pragma GCC unroll 16
      for (int m = 0; m < MB; ++m) qv[m] = _mm256_loadu_ps(q[m] + c);
#pragma GCC unroll 16
      for (int n = 0; n < NB; ++n) {
        const __m256 kv = Rows::load(k[n], c);
#pragma GCC unroll 16
        for (int m = 0; m < MB; ++m) acc[m][n] = _mm256_fmadd_ps(qv[m], kv, acc[m][n]);
      }
    }
  }
  const __m128 sc = _mm_set1_ps(scale);
  if constexpr (NB == 2) {
    // Two query vectors' pairs reduced together: {s(m,0), s(m,1), s(m+1,0), s(m+1,1)}.
    int m = 0;
    for (; m + 2 <= MB; m += 2) {
      const __m128 r = _mm_mul_ps(hsum4_ps(acc[m][0], acc[m][1], acc[m + 1][0], acc[m + 1][1]), sc);
      _mm_storel_pi(reinterpret_cast<__m64*>(s + m * T), r);
      _mm_storeh_pi(reinterpret_cast<__m64*>(s + (m + 1) * T), r);
    }
    if (m < MB) {
      const __m128 r = _mm_mul_ps(hsum2_ps(acc[m][0], acc[m][1]), sc);
      _mm_storel_pi(reinterpret_cast<__m64*>(s + m * T), r);
    }
  } else {
#pragma GCC unroll 16
    for (int m = 0; m < MB; ++m) {
#pragma GCC unroll 16
      for (int n = 0; n < NB; n += 4) {
        const __m128 r = hsum4_ps(acc[m][n], acc[m][n + 1], acc[m][n + 2], acc[m][n + 3]);
        _mm_storeu_ps(s + m * T + n, _mm_mul_ps(r, sc));
      }
    }
  }
}

// Scores of MB query vectors against keys [0, jn) (k padded with valid rows up to a multiple
// of 8; the extra scores are discarded by the caller).
template <class Rows, int MB>
inline void qk_rows(const float* const* q, const uint8_t* const* k, int64_t jn, int64_t hd,
                    float scale, float* s) {
  constexpr int NB = MB >= 3 ? 2 : 8 / MB;
  for (int64_t n = 0; n < jn; n += NB) qk_block<Rows, MB, NB>(q, k + n, hd, scale, s + n);
}

// o[m][c0 .. c0 + 8*CB) = o*alpha[m] + sum_{j < jn} p[m*T + j] * v[j], j in order.
template <class Rows, int MB, int CB>
inline void pv_block(float* const* o, const float* alpha, const float* p, const uint8_t* const* v,
                     int64_t jn, int64_t c0) {
  __m256 acc[MB][CB];
#pragma GCC unroll 16
  for (int m = 0; m < MB; ++m) {
    const __m256 a = _mm256_set1_ps(alpha[m]);
#pragma GCC unroll 16
    for (int c = 0; c < CB; ++c) acc[m][c] = _mm256_mul_ps(_mm256_loadu_ps(o[m] + c0 + 8 * c), a);
  }
  for (int64_t j = 0; j < jn; ++j) {
    const uint8_t* vj = v[j];
    if constexpr (MB >= 3) {  // V chunks in registers, probabilities streamed
      __m256 vv[CB];
#pragma GCC unroll 16
      for (int c = 0; c < CB; ++c) vv[c] = Rows::load(vj, c0 + 8 * c);
#pragma GCC unroll 16
      for (int m = 0; m < MB; ++m) {
        const __m256 pb = _mm256_broadcast_ss(p + m * T + j);
#pragma GCC unroll 16
        for (int c = 0; c < CB; ++c) acc[m][c] = _mm256_fmadd_ps(pb, vv[c], acc[m][c]);
      }
    } else {  // probabilities in registers, V chunks streamed
      __m256 pb[MB];
#pragma GCC unroll 16
      for (int m = 0; m < MB; ++m) pb[m] = _mm256_broadcast_ss(p + m * T + j);
#pragma GCC unroll 16
      for (int c = 0; c < CB; ++c) {
        const __m256 vv = Rows::load(vj, c0 + 8 * c);
#pragma GCC unroll 16
        for (int m = 0; m < MB; ++m) acc[m][c] = _mm256_fmadd_ps(pb[m], vv, acc[m][c]);
      }
    }
  }
#pragma GCC unroll 16
  for (int m = 0; m < MB; ++m)
#pragma GCC unroll 16
    for (int c = 0; c < CB; ++c) _mm256_storeu_ps(o[m] + c0 + 8 * c, acc[m][c]);
}

template <class Rows, int MB>
inline void pv_rows(float* const* o, const float* alpha, const float* p, const uint8_t* const* v,
                    int64_t jn, int64_t hd) {
  constexpr int CB = MB >= 3 ? 2 : 8 / MB;
  int64_t c0 = 0;
  for (; c0 + 8 * CB <= hd; c0 += 8 * CB) pv_block<Rows, MB, CB>(o, alpha, p, v, jn, c0);
  for (; c0 < hd; c0 += 8) pv_block<Rows, MB, 1>(o, alpha, p, v, jn, c0);
}

// Runs kernel<mb>(m, mb) over query vectors [m0, m1) in blocks of up to MAX.
template <int MAX, typename F>
inline void for_blocks(int64_t m0, int64_t m1, F&& f) {
  int64_t m = m0;
  for (; m + MAX <= m1; m += MAX) f(std::integral_constant<int, MAX>{}, m);
  if constexpr (MAX > 1) {
    const int64_t rest = m1 - m;
    if (rest > 0) {
      [&]<int... I>(std::integer_sequence<int, I...>) {
        ((rest == I + 1 ? (f(std::integral_constant<int, I + 1>{}, m), 0) : 0), ...);
      }
      (std::make_integer_sequence<int, MAX - 1>{});
    }
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

// The task, reading K/V rows through Rows: kDirect reads the encoded rows in place (few query
// vectors: each element is converted once anyway); otherwise each tile's rows are decoded once
// into a buffer that every query block then reads as f32.
template <class Rows, bool kDirect>
void run_task(const AttnTask& t) {
  const KvSeqView& kv = *t.kv;
  const TensorType type = kv.layout.type;
  const int64_t hd = t.head_dim, G = t.group, M = t.n_rows * G;
  const auto uhd = static_cast<size_t>(hd), uT = static_cast<size_t>(T);
  const auto uM = static_cast<size_t>(M);
  // One tile buffer, holding the decoded K rows during the scores and then the V rows: small
  // enough (16 KiB at head_dim 128) to stay in L1 while every query block passes over it.
  const size_t tile_floats = kDirect ? 0 : uT * uhd;
  float* tile = thread_scratch(tile_floats + uM * (uT + 2 * uhd + 3));
  float* s = tile + tile_floats;  // [M][T] scores, then probabilities
  float* o = s + uM * uT;         // [M][hd] unnormalised outputs
  float* qc = o + uM * uhd;       // [M][hd] the queries, contiguous
  float* mx = qc + uM * uhd;
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
    // Query rows of a chunk sit n_head*head_dim floats apart, often a multiple of 4 KiB: read in
    // place, a block's queries would share a few L1 sets. A contiguous copy avoids that.
    std::memcpy(qc + m * hd, t.q + (m / G) * t.row_stride + (m % G) * hd, uhd * sizeof(float));
    qp[static_cast<size_t>(m)] = qc + m * hd;
    op[static_cast<size_t>(m)] = o + m * hd;
  }
  const uint8_t* krow[T];  // rows the kernels read (encoded, or decoded into `tile`)
  const uint8_t* vrow[T];
  const uint8_t* ksrc[T];  // encoded rows of the current tile
  const uint8_t* vsrc[T];
  const uint8_t* kpf[T];  // and of the tile kPrefetchTiles ahead
  const uint8_t* vpf[T];

  const int64_t p_last = t.pos_first + t.n_rows - 1;
  const auto hb = static_cast<int64_t>(t.head_bytes);
  auto tile_len = [&](int64_t j0) { return std::clamp<int64_t>(p_last + 1 - j0, 0, T); };
  for (int64_t i = 0; i < kPrefetchTiles; ++i) {
    const int64_t n = tile_len(i * T);
    tile_rows(t, i * T, n, kpf, vpf);
    for (int64_t j = 0; j < n; ++j) {
      prefetch_row(kpf[j], hb);
      prefetch_row(vpf[j], hb);
    }
  }
  auto rows_of = [&](const uint8_t* const* src, int64_t jn, const uint8_t* const* pf, int64_t n_pf,
                     const uint8_t** dst) {
    for (int64_t j = 0; j < jn; ++j) {
      if (j < n_pf) prefetch_row(pf[j], hb);
      if constexpr (kDirect) {
        dst[j] = src[j];
      } else {
        dst[j] = reinterpret_cast<const uint8_t*>(decode_row(type, src[j], tile + j * hd, hd));
      }
    }
  };
  for (int64_t j0 = 0; j0 <= p_last; j0 += T) {
    const int64_t jn = tile_len(j0);
    tile_rows(t, j0, jn, ksrc, vsrc);
    const int64_t n_pf = tile_len(j0 + kPrefetchTiles * T);
    tile_rows(t, j0 + kPrefetchTiles * T, n_pf, kpf, vpf);
    rows_of(ksrc, jn, kpf, n_pf, krow);
    for (int64_t j = jn; j < T; ++j) krow[j] = krow[0];  // padding, scores discarded

    // Query vectors whose position is >= j0 take part in this tile.
    const int64_t m_begin = std::max<int64_t>(0, j0 - t.pos_first) * G;
    for_blocks<kMaxMb>(m_begin, M, [&](auto mb, int64_t m) {
      qk_rows<Rows, decltype(mb)::value>(&qp[static_cast<size_t>(m)], krow, jn, hd, t.scale,
                                         s + m * T);
    });
    for (int64_t m = m_begin; m < M; ++m) {
      const int64_t valid = std::min(jn, t.pos_first + m / G - j0 + 1);
      alpha[m] = softmax_tile(s + m * T, valid, mx[m], l[m]);
    }

    rows_of(vsrc, jn, vpf, n_pf, vrow);
    // Vectors that see every position of the tile go through the blocked kernel; the others
    // (the diagonal) one at a time with their own end. Same operation sequence either way.
    const int64_t r_full = std::clamp<int64_t>(j0 + jn - 1 - t.pos_first, 0, t.n_rows);
    const int64_t m_full = std::max(m_begin, r_full * G);
    for (int64_t m = m_begin; m < m_full; ++m) {
      const int64_t valid = std::min(jn, t.pos_first + m / G - j0 + 1);
      pv_rows<Rows, 1>(&op[static_cast<size_t>(m)], alpha + m, s + m * T, vrow, valid, hd);
    }
    for_blocks<kMaxMb>(m_full, M, [&](auto mb, int64_t m) {
      pv_rows<Rows, decltype(mb)::value>(&op[static_cast<size_t>(m)], alpha + m, s + m * T, vrow,
                                         jn, hd);
    });
  }
  for (int64_t m = 0; m < M; ++m) {
    const __m256 inv = _mm256_set1_ps(1.0f / l[m]);
    float* out = t.out + (m / G) * t.row_stride + (m % G) * hd;
    for (int64_t i = 0; i < hd; i += 8)
      _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_loadu_ps(o + m * hd + i), inv));
  }
}

}  // namespace

void attention_task(const AttnTask& t) {
  if (t.n_rows * t.group > kMaxMb) return run_task<F32Rows, false>(t);
  switch (t.kv->layout.type) {
    case TensorType::F16:
      return run_task<F16Rows, true>(t);
    case TensorType::Q8_0:
      return run_task<Q8Rows, true>(t);
    case TensorType::Q4_0:
      return run_task<Q4Rows, true>(t);
    default:
      return run_task<F32Rows, true>(t);
  }
}

}  // namespace hearth::ops::detail::avx2
