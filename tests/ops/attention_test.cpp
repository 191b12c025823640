// Fused attention against the double-precision reference, and its batch invariance: a query's
// output must not depend on how queries are chunked, on the thread count or on the KV block
// size or row order (bit-identical), at each SIMD level.
//
// Tolerance: the kernel and the reference read the same decoded K/V values (F16 exactly
// widened, Q8_0 and Q4_0 as d*q in float, as the reference dequantizer), so the difference is
// only float vs double arithmetic: |fused - ref| <= 1e-5 * (max |ref| of that output row) + 1e-7
// per element, for every KV type (measured worst 3.2e-6 of the row max, typically 1e-6).
// What the KV type itself costs (quantization error, against attention over the f32 rows) is
// a separate, much looser figure: see QuantizedKvAgainstF32.
#include "ops/attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "kernel_test_util.h"
#include "ops/cpu_features.h"
#include "ops/thread_pool.h"
#include "quant/dequantize.h"
#include "util/error.h"

namespace hearth::ops {
namespace {

constexpr TensorType kKvTypes[] = {TensorType::F32, TensorType::F16, TensorType::Q8_0,
                                   TensorType::Q4_0};

using test::LevelGuard;
using test::random_vec;

// One sequence's K and V, encoded into blocks of block_tokens tokens.
struct Cache {
  KvLayout layout;
  std::vector<std::vector<uint8_t>> kb, vb;
  std::vector<const uint8_t*> kp, vp;
  KvSeqView view;

  Cache(TensorType type, int64_t n_kv_head, int64_t head_dim, int64_t block_tokens,
        int64_t n_tokens, uint32_t seed, bool head_major = false) {
    layout.type = type;
    layout.n_kv_head = n_kv_head;
    layout.head_dim = head_dim;
    layout.block_tokens = block_tokens;
    layout.head_major = head_major;
    const int64_t n_blocks = (n_tokens + block_tokens - 1) / block_tokens;
    const size_t width = static_cast<size_t>(n_kv_head * head_dim);
    for (int64_t b = 0; b < n_blocks; ++b) {
      // Unused tail tokens stay NaN-filled: the kernel must never read them.
      kb.emplace_back(layout.block_bytes(), uint8_t{0xff});
      vb.emplace_back(layout.block_bytes(), uint8_t{0xff});
    }
    for (int64_t t = 0; t < n_tokens; ++t) {
      const auto k = random_vec(width, seed + 2 * static_cast<uint32_t>(t));
      const auto v = random_vec(width, seed + 2 * static_cast<uint32_t>(t) + 1);
      const size_t b = static_cast<size_t>(t / block_tokens);
      kv_store_token(layout, k.data(), kb[b].data(), t % block_tokens);
      kv_store_token(layout, v.data(), vb[b].data(), t % block_tokens);
    }
    for (auto& b : kb) kp.push_back(b.data());
    for (auto& b : vb) vp.push_back(b.data());
    view.layout = layout;
    view.k_blocks = kp.data();
    view.v_blocks = vp.data();
    view.n_tokens = n_tokens;
  }
};

// Avx2Vnni runs the AVX-512 build of the task on CPUs with AVX-512 (ops/cpu_features.h).
std::vector<SimdLevel> levels() {
  return test::levels_available({SimdLevel::Scalar, SimdLevel::Avx2, SimdLevel::Avx2Vnni});
}

std::vector<float> run_fused(const Cache& c, const std::vector<float>& q, int64_t n_head,
                             int64_t n_q, int64_t pos0, float scale, ThreadPool& pool,
                             int64_t window = 0) {
  std::vector<float> out(static_cast<size_t>(n_q * n_head * c.layout.head_dim), -7.0f);
  AttentionArgs a;
  a.window = window;
  a.q = q.data();
  a.n_q = n_q;
  a.n_head = n_head;
  a.pos0 = pos0;
  a.scale = scale;
  a.out = out.data();
  attention(a, c.view, pool);
  return out;
}

std::vector<float> run_reference(const Cache& c, const std::vector<float>& q, int64_t n_head,
                                 int64_t n_q, int64_t pos0, float scale, int64_t window = 0) {
  std::vector<float> out(static_cast<size_t>(n_q * n_head * c.layout.head_dim));
  AttentionArgs a;
  a.window = window;
  a.q = q.data();
  a.n_q = n_q;
  a.n_head = n_head;
  a.pos0 = pos0;
  a.scale = scale;
  a.out = out.data();
  attention_reference(a, c.view);
  return out;
}

// Largest error relative to the row's scale; fails the tolerance above with context.
double check_close(const std::vector<float>& got, const std::vector<float>& want, int64_t hd,
                   const std::string& what) {
  double worst = 0;
  for (size_t r = 0; r < got.size() / static_cast<size_t>(hd); ++r) {
    double amax = 0;
    for (int64_t i = 0; i < hd; ++i)
      amax = std::max(
          amax, std::fabs(double(want[r * static_cast<size_t>(hd) + static_cast<size_t>(i)])));
    for (int64_t i = 0; i < hd; ++i) {
      const size_t k = r * static_cast<size_t>(hd) + static_cast<size_t>(i);
      const double err = std::fabs(double(got[k]) - want[k]);
      worst = std::max(worst, err / (amax + 1e-30));
      if (!(err <= 1e-5 * amax + 1e-7)) {
        ADD_FAILURE() << what << ": row " << r << " elem " << i << " got " << got[k] << " want "
                      << want[k] << " (row max " << amax << ")";
        return worst;
      }
    }
  }
  return worst;
}

struct Case {
  TensorType type;
  int64_t head_dim, ratio, n_q, pos0, block_tokens;
  float q_scale = 1.0f;
  bool head_major = false;
};

void check_case(const Case& c, ThreadPool& pool) {
  const int64_t n_kv = 2, n_head = n_kv * c.ratio;
  const int64_t n_tokens = c.pos0 + c.n_q;
  const int64_t bt = c.block_tokens > 0 ? c.block_tokens : n_tokens;  // 0: one big block
  Cache cache(c.type, n_kv, c.head_dim, bt, n_tokens, 1000 + static_cast<uint32_t>(c.head_dim),
              c.head_major);
  const auto q = random_vec(static_cast<size_t>(c.n_q * n_head * c.head_dim), 7, c.q_scale);
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  const auto want = run_reference(cache, q, n_head, c.n_q, c.pos0, scale);
  LevelGuard guard;
  for (SimdLevel l : levels()) {
    set_simd_level(l);
    const auto got = run_fused(cache, q, n_head, c.n_q, c.pos0, scale, pool);
    const std::string what = std::string(type_name(c.type)) + " " + simd_level_name(l) +
                             " hd=" + std::to_string(c.head_dim) +
                             " gqa=" + std::to_string(c.ratio) + " n_q=" + std::to_string(c.n_q) +
                             " pos0=" + std::to_string(c.pos0) + " bt=" + std::to_string(bt) +
                             (c.head_major ? " head-major" : " token-major");
    const double w = check_close(got, want, c.head_dim, what);
    if (getenv("ATTN_VERBOSE")) printf("%s worst %.3g\n", what.c_str(), w);
  }
}

TEST(Attention, HeadBytes) {
  KvLayout l;
  l.n_kv_head = 4;
  l.head_dim = 128;
  l.block_tokens = 16;
  l.type = TensorType::F32;
  EXPECT_EQ(l.head_bytes(), 512u);
  l.type = TensorType::F16;
  EXPECT_EQ(l.head_bytes(), 256u);
  l.type = TensorType::Q8_0;
  EXPECT_EQ(l.head_bytes(), 4u * 34u);
  EXPECT_EQ(l.token_bytes(), 4u * 4u * 34u);
  EXPECT_EQ(l.block_bytes(), 16u * 4u * 4u * 34u);
  l.type = TensorType::Q4_0;
  EXPECT_EQ(l.head_bytes(), 4u * 18u);
  // Qwen3-0.6B: 28 layers x 8 KV heads x 128, K and V: 32,256 bytes a token (F16: 114,688).
  l.n_kv_head = 8;
  EXPECT_EQ(2 * 28 * l.token_bytes(), 32256u);
}

TEST(Attention, EncodeRoundTrip) {
  for (TensorType t : kKvTypes) {
    KvLayout l;
    l.type = t;
    l.n_kv_head = 3;
    l.head_dim = 64;
    l.block_tokens = 1;
    const auto x = random_vec(3 * 64, 5);
    std::vector<uint8_t> enc(l.token_bytes());
    kv_encode_token(l, x.data(), enc.data());
    std::vector<float> back(x.size());
    for (int h = 0; h < 3; ++h)
      dequantize_row(t, enc.data() + static_cast<size_t>(h) * l.head_bytes(), back.data() + h * 64,
                     64);
    const double tol = t == TensorType::F32    ? 0
                       : t == TensorType::F16  ? 2e-3
                       : t == TensorType::Q8_0 ? 2e-2
                                               : 0.25;  // Q4_0: half a step of amax/8
    for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(back[i], x[i], tol * 4) << i;
    // Deterministic.
    std::vector<uint8_t> enc2(l.token_bytes());
    kv_encode_token(l, x.data(), enc2.data());
    EXPECT_EQ(enc, enc2);
    // kv_store_token places the same rows, in either order.
    for (bool hm : {false, true}) {
      KvLayout b = l;
      b.block_tokens = 4;
      b.head_major = hm;
      std::vector<uint8_t> block(b.block_bytes());
      kv_store_token(b, x.data(), block.data(), 2);
      for (int h = 0; h < 3; ++h)
        EXPECT_EQ(std::memcmp(block.data() + kv_row_offset(b, 2, h),
                              enc.data() + static_cast<size_t>(h) * l.head_bytes(), l.head_bytes()),
                  0);
    }
  }
}

TEST(Attention, MatchesReferenceAcrossHeadDimsAndGqa) {
  ThreadPool pool(2);
  for (TensorType t : kKvTypes)
    for (int64_t hd : {8, 16, 32, 64, 128}) {
      if (t != TensorType::F32 && t != TensorType::F16 && hd % 32) continue;
      for (int64_t ratio : {1, 2, 4, 8})
        check_case({t, hd, ratio, 7, 100, 16, 1.0f, ratio % 4 == 0}, pool);
    }
}

TEST(Attention, MatchesReferenceAcrossPositionsAndBlocks) {
  ThreadPool pool(2);
  int i = 0;
  const int64_t bts[] = {16, 32, 64, 0};
  for (TensorType t : kKvTypes)
    for (int64_t n_q : {1, 7, 64})
      for (int64_t pos0 : {0, 100, 1000}) {
        check_case({t, 64, 2, n_q, pos0, bts[i % 4], 1.0f, i % 3 == 1}, pool);
        ++i;
      }
}

TEST(Attention, MatchesReferenceHeadDim128LongPrefix) {
  ThreadPool pool(2);
  for (TensorType t : kKvTypes) {
    check_case({t, 128, 2, 64, 1000, 64}, pool);
    check_case({t, 128, 2, 64, 1000, 32, 1.0f, true}, pool);
    check_case({t, 128, 8, 1, 1000, 0}, pool);
    check_case({t, 128, 8, 1, 1000, 16, 1.0f, true}, pool);
  }
}

// What storing K/V in a smaller type costs: the fused kernel over a quantized cache against the
// reference over the same rows kept in f32. This is quantization error, not kernel error, so it
// is stated per type, at head_dim 128 with random normal q, k, v over 300 positions, as the worst
// |diff| relative to the output row's largest magnitude (measured: F16 6e-4, Q8_0 1.2e-2, Q4_0
// 0.26) and as the RMS of the diff relative to the RMS of the output (F16 3.1e-4, Q8_0 7.4e-3,
// Q4_0 0.13). Q4_0's step is a block's largest magnitude / 8 (for normal data, rounding noise
// of ~9% of the standard deviation on every K and V element); what that does to a model's
// output depends on the model.
TEST(Attention, QuantizedKvAgainstF32) {
  ThreadPool pool(2);
  const int64_t hd = 128, n_kv = 2, n_head = 4, n_q = 16, pos0 = 300;
  const Cache exact(TensorType::F32, n_kv, hd, 32, pos0 + n_q, 21, true);
  const auto q = random_vec(static_cast<size_t>(n_q * n_head * hd), 22);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const auto want = run_reference(exact, q, n_head, n_q, pos0, scale);
  for (TensorType t : {TensorType::F16, TensorType::Q8_0, TensorType::Q4_0}) {
    const Cache cache(t, n_kv, hd, 32, pos0 + n_q, 21, true);
    const auto got = run_fused(cache, q, n_head, n_q, pos0, scale, pool);
    double worst = 0, sq_err = 0, sq = 0;
    for (size_t r = 0; r < got.size() / static_cast<size_t>(hd); ++r) {
      double amax = 0, err = 0;
      for (size_t i = r * hd; i < (r + 1) * hd; ++i) {
        const double d = double(got[i]) - want[i];
        amax = std::max(amax, std::fabs(double(want[i])));
        err = std::max(err, std::fabs(d));
        sq_err += d * d;
        sq += double(want[i]) * want[i];
      }
      worst = std::max(worst, err / amax);
    }
    const double rms = std::sqrt(sq_err / sq);
    const double bound = t == TensorType::F16 ? 2e-3 : t == TensorType::Q8_0 ? 3e-2 : 0.5;
    const double rms_bound = t == TensorType::F16 ? 1e-3 : t == TensorType::Q8_0 ? 2e-2 : 0.25;
    EXPECT_LT(worst, bound) << type_name(t);
    EXPECT_LT(rms, rms_bound) << type_name(t);
    std::printf(
        "[ measured ] %s KV vs f32 KV: worst |diff| / row max %.2g (bound %.2g), rms %.2g "
        "(bound %.2g)\n",
        std::string(type_name(t)).c_str(), worst, bound, rms, rms_bound);
  }
}

TEST(Attention, PeakedSoftmax) {
  // Large scores: the online rescaling must keep the result exact to float precision.
  ThreadPool pool(2);
  for (TensorType t : kKvTypes) check_case({t, 64, 4, 7, 300, 32, 6.0f}, pool);
}

// The rows of a 64-query chunk equal each query run alone, chunks of 7, any thread count and
// any block size: bit for bit.
TEST(Attention, BatchInvariance) {
  const int64_t hd = 64, n_kv = 2, n_head = 8, pos0 = 100, n_q = 64;
  const int64_t n_tokens = pos0 + n_q;
  const float scale = 0.1f;  // not a power of two: scaling must not be exact
  const auto q = random_vec(static_cast<size_t>(n_q * n_head * hd), 11);
  const size_t row = static_cast<size_t>(n_head * hd);
  ThreadPool pool1(1), pool2(2), pool3(3);
  LevelGuard guard;
  for (TensorType t : kKvTypes) {
    Cache cache(t, n_kv, hd, 32, n_tokens, 77);
    Cache cache16(t, n_kv, hd, 16, n_tokens, 77), cache_big(t, n_kv, hd, n_tokens, n_tokens, 77);
    Cache cache_hm(t, n_kv, hd, 16, n_tokens, 77, true);
    for (SimdLevel l : levels()) {
      set_simd_level(l);
      SCOPED_TRACE(std::string(type_name(t)) + " " + simd_level_name(l));
      const auto full = run_fused(cache, q, n_head, n_q, pos0, scale, pool2);
      // Alone.
      for (int64_t r = 0; r < n_q; ++r) {
        const std::vector<float> qr(q.begin() + static_cast<ptrdiff_t>(r * row),
                                    q.begin() + static_cast<ptrdiff_t>((r + 1) * row));
        const auto one = run_fused(cache, qr, n_head, 1, pos0 + r, scale, pool2);
        ASSERT_EQ(std::memcmp(one.data(), full.data() + r * row, row * 4), 0) << "row " << r;
      }
      // Chunks of 7.
      for (int64_t r0 = 0; r0 < n_q; r0 += 7) {
        const int64_t n = std::min<int64_t>(7, n_q - r0);
        const std::vector<float> qc(q.begin() + static_cast<ptrdiff_t>(r0 * row),
                                    q.begin() + static_cast<ptrdiff_t>((r0 + n) * row));
        const auto part = run_fused(cache, qc, n_head, n, pos0 + r0, scale, pool2);
        ASSERT_EQ(std::memcmp(part.data(), full.data() + r0 * row, part.size() * 4), 0)
            << "chunk at " << r0;
      }
      // Threads.
      for (ThreadPool* p : {&pool1, &pool3}) {
        const auto other = run_fused(cache, q, n_head, n_q, pos0, scale, *p);
        ASSERT_EQ(std::memcmp(other.data(), full.data(), full.size() * 4), 0) << p->size();
      }
      // Block sizes (paged vs contiguous) and row order.
      for (const Cache* c : {&cache16, &cache_big, &cache_hm}) {
        const auto other = run_fused(*c, q, n_head, n_q, pos0, scale, pool2);
        ASSERT_EQ(std::memcmp(other.data(), full.data(), full.size() * 4), 0)
            << c->layout.block_tokens;
      }
    }
  }
}

// A sliding window (gemma3's local layers): the fused kernels match the reference with the
// window's mask, for windows below, at and across the 32-position tiles, in the tiled (many
// rows) and direct (one row) paths; and stay batch invariant: each row alone, chunks of 7 and
// other thread counts give the same bits as the whole prefill.
TEST(Attention, SlidingWindowMatchesReferenceAndIsBatchInvariant) {
  const int64_t hd = 64, n_kv = 2, n_head = 4, pos0 = 90, n_q = 60;
  const int64_t n_tokens = pos0 + n_q;
  const float scale = 0.125f;
  const auto q = random_vec(static_cast<size_t>(n_q * n_head * hd), 31);
  const size_t row = static_cast<size_t>(n_head * hd);
  ThreadPool pool1(1), pool2(2), pool3(3);
  LevelGuard guard;
  for (TensorType t : kKvTypes) {
    Cache cache(t, n_kv, hd, 16, n_tokens, 55, true);
    for (int64_t window : {1, 16, 32, 45, 200}) {
      const auto want = run_reference(cache, q, n_head, n_q, pos0, scale, window);
      for (SimdLevel l : levels()) {
        set_simd_level(l);
        const std::string what = std::string(type_name(t)) + " " + simd_level_name(l) +
                                 " window=" + std::to_string(window);
        SCOPED_TRACE(what);
        const auto full = run_fused(cache, q, n_head, n_q, pos0, scale, pool2, window);
        check_close(full, want, hd, what);
        for (int64_t r = 0; r < n_q; r += 5) {
          const std::vector<float> qr(q.begin() + static_cast<ptrdiff_t>(r * row),
                                      q.begin() + static_cast<ptrdiff_t>((r + 1) * row));
          const auto one = run_fused(cache, qr, n_head, 1, pos0 + r, scale, pool2, window);
          ASSERT_EQ(std::memcmp(one.data(), full.data() + r * row, row * 4), 0) << "row " << r;
        }
        for (int64_t r0 = 0; r0 < n_q; r0 += 7) {
          const int64_t n = std::min<int64_t>(7, n_q - r0);
          const std::vector<float> qc(q.begin() + static_cast<ptrdiff_t>(r0 * row),
                                      q.begin() + static_cast<ptrdiff_t>((r0 + n) * row));
          const auto part = run_fused(cache, qc, n_head, n, pos0 + r0, scale, pool2, window);
          ASSERT_EQ(std::memcmp(part.data(), full.data() + r0 * row, part.size() * 4), 0)
              << "chunk at " << r0;
        }
        for (ThreadPool* p : {&pool1, &pool3}) {
          const auto other = run_fused(cache, q, n_head, n_q, pos0, scale, *p, window);
          ASSERT_EQ(std::memcmp(other.data(), full.data(), full.size() * 4), 0) << p->size();
        }
      }
    }
  }
}

// The guarantee the KV manager's window release relies on: blocks wholly before the first query
// row's window are never dereferenced. Null pointers there give the same bits as the real
// blocks, for block sizes below and at the 32-position tile, prefill chunks and decode rows.
TEST(Attention, SlidingWindowNeverReadsBlocksBeforeTheWindow) {
  const int64_t hd = 64, n_kv = 2, n_head = 4, n_tokens = 150;
  const float scale = 0.125f;
  ThreadPool pool2(2);
  LevelGuard guard;
  struct Step {
    int64_t pos0, n_q;
  };
  for (TensorType t : kKvTypes)
    for (int64_t bt : {4, 16, 32})
      for (int64_t window : {5, 16, 45}) {
        Cache cache(t, n_kv, hd, bt, n_tokens, 77, true);
        for (Step st : {Step{90, 60}, Step{100, 7}, Step{149, 1}, Step{37, 1}}) {
          const auto q = random_vec(static_cast<size_t>(st.n_q * n_head * hd), 5);
          Cache holes = cache;
          holes.kp.assign(cache.kp.begin(), cache.kp.end());
          holes.vp.assign(cache.vp.begin(), cache.vp.end());
          const int64_t first = std::max<int64_t>(0, st.pos0 - window + 1);
          for (int64_t b = 0; (b + 1) * bt <= first; ++b)
            holes.kp[static_cast<size_t>(b)] = holes.vp[static_cast<size_t>(b)] = nullptr;
          holes.view.k_blocks = holes.kp.data();
          holes.view.v_blocks = holes.vp.data();
          const auto want = run_reference(holes, q, n_head, st.n_q, st.pos0, scale, window);
          for (SimdLevel l : levels()) {
            set_simd_level(l);
            SCOPED_TRACE(std::string(type_name(t)) + " " + simd_level_name(l) +
                         " bt=" + std::to_string(bt) + " window=" + std::to_string(window) +
                         " pos0=" + std::to_string(st.pos0));
            const auto full = run_fused(cache, q, n_head, st.n_q, st.pos0, scale, pool2, window);
            const auto got = run_fused(holes, q, n_head, st.n_q, st.pos0, scale, pool2, window);
            ASSERT_EQ(std::memcmp(got.data(), full.data(), full.size() * 4), 0);
            check_close(got, want, hd, "null blocks");
          }
        }
      }
}

// Several sequences in one attention_batch call give what each gives alone, bit for bit: a
// prefill chunk, decode rows and an empty query among them, over different caches.
TEST(Attention, BatchOfSequencesMatchesEachAlone) {
  const int64_t hd = 64, n_kv = 2, n_head = 4;
  const float scale = 0.1f;
  ThreadPool pool1(1), pool2(2);
  LevelGuard guard;
  struct Seq {
    int64_t pos0, n_q;
  };
  const Seq seqs[] = {{0, 40}, {90, 1}, {5, 0}, {200, 1}, {33, 9}};
  for (TensorType t : kKvTypes)
    for (SimdLevel l : levels()) {
      set_simd_level(l);
      SCOPED_TRACE(std::string(type_name(t)) + " " + simd_level_name(l));
      std::vector<Cache> caches;
      std::vector<std::vector<float>> qs, alone, batched;
      std::vector<AttentionArgs> args;
      std::vector<KvSeqView> views;
      for (size_t i = 0; i < std::size(seqs); ++i) {
        const Seq& s = seqs[i];
        caches.emplace_back(t, n_kv, hd, 16, s.pos0 + s.n_q, 300 + 10 * i);
        qs.push_back(random_vec(static_cast<size_t>(s.n_q * n_head * hd), 400 + i));
        alone.push_back(run_fused(caches.back(), qs.back(), n_head, s.n_q, s.pos0, scale, pool2));
        batched.emplace_back(alone.back().size(), -3.0f);
      }
      for (size_t i = 0; i < std::size(seqs); ++i) {
        args.push_back({qs[i].data(), seqs[i].n_q, n_head, seqs[i].pos0, scale, batched[i].data()});
        views.push_back(caches[i].view);
      }
      for (ThreadPool* p : {&pool1, &pool2}) {
        attention_batch(args, views, *p);
        for (size_t i = 0; i < std::size(seqs); ++i) {
          ASSERT_EQ(alone[i].size(), batched[i].size());
          if (alone[i].empty()) continue;  // the empty query (memcmp must not see null)
          ASSERT_EQ(std::memcmp(alone[i].data(), batched[i].data(), alone[i].size() * 4), 0)
              << "sequence " << i << " threads " << p->size();
        }
      }
      EXPECT_THROW(attention_batch(args, std::span(views).first(2), pool2), hearth::Error);
    }
}

TEST(Attention, ScalarAndAvx2Agree) {
  LevelGuard guard;
  if (levels().size() < 2) GTEST_SKIP() << "no AVX2";
  ThreadPool pool(2);
  for (TensorType t : kKvTypes) {
    Cache cache(t, 2, 128, 32, 300, 3);
    const auto q = random_vec(static_cast<size_t>(20 * 4 * 128), 4);
    set_simd_level(SimdLevel::Scalar);
    const auto a = run_fused(cache, q, 4, 20, 280, 0.09f, pool);
    set_simd_level(SimdLevel::Avx2);
    const auto b = run_fused(cache, q, 4, 20, 280, 0.09f, pool);
    check_close(b, a, 128, std::string("scalar vs avx2 ") + std::string(type_name(t)));
  }
}

// The AVX-512 build of the task gives the AVX2 build's bits (a cached block must equal a
// recomputed one on a machine of another kind): prefill tiles and decode rows (one, two and more
// query vectors per KV head), head widths with and without a last column chunk of 8 or 16, GQA
// groups, every KV type.
TEST(Attention, Avx512BuildIsBitIdenticalToAvx2) {
  LevelGuard guard;
  const std::vector<SimdLevel> ls = levels();
  if (std::find(ls.begin(), ls.end(), SimdLevel::Avx2Vnni) == ls.end() ||
      !test::vnni_encodings().back())
    GTEST_SKIP() << "no AVX-512";
  ThreadPool pool(2);
  const bool pairs_before = attention_key_pairs();
  struct Shape {
    int64_t hd, n_kv, n_head, n_q, pos0;
  };
  for (TensorType t : kKvTypes)
    for (const Shape sh : {Shape{128, 2, 4, 45, 70}, Shape{64, 1, 8, 1, 200},
                           Shape{96, 2, 2, 33, 0}, Shape{128, 4, 4, 3, 90},
                           // decode with one or two query vectors per KV head (the 512-bit
                           // key-pair scores and 16-column P*V), with and without column tails
                           Shape{128, 2, 4, 1, 300}, Shape{96, 2, 2, 1, 77},
                           Shape{40, 1, 1, 1, 100}, Shape{72, 1, 2, 1, 65}}) {
      const bool blocks = t == TensorType::Q8_0 || t == TensorType::Q4_0;
      if (blocks && sh.hd % 32 != 0) continue;  // quantized heads are whole blocks of 32
      Cache cache(t, sh.n_kv, sh.hd, 32, sh.pos0 + sh.n_q, 21);
      const auto q = random_vec(static_cast<size_t>(sh.n_q * sh.n_head * sh.hd), 22);
      set_simd_level(SimdLevel::Avx2);
      const auto a = run_fused(cache, q, sh.n_head, sh.n_q, sh.pos0, 0.07f, pool);
      set_simd_level(SimdLevel::Avx2Vnni);
      set_vnni_evex(true);
      ASSERT_STREQ(attention_kernel_name(), "avx512");
      for (const bool pairs : {false, true}) {  // decode scores one or two keys per vector
        set_attention_key_pairs(pairs);
        const auto b = run_fused(cache, q, sh.n_head, sh.n_q, sh.pos0, 0.07f, pool);
        ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0)
            << type_name(t) << " head_dim " << sh.hd << " n_q " << sh.n_q << " key pairs " << pairs;
      }
      set_attention_key_pairs(pairs_before);
    }
}

TEST(Attention, RejectsBadArguments) {
  ThreadPool pool(1);
  Cache cache(TensorType::F16, 2, 64, 16, 10, 1);
  std::vector<float> q(3 * 64 * 4), out(q.size());
  AttentionArgs a;
  a.q = q.data();
  a.out = out.data();
  a.n_head = 4;
  a.n_q = 3;
  a.pos0 = 8;  // 8 + 3 > 10 cached tokens
  EXPECT_ANY_THROW(attention(a, cache.view, pool));
  EXPECT_ANY_THROW(attention_reference(a, cache.view));
  a.pos0 = 0;
  a.n_head = 3;  // not a multiple of 2 KV heads
  EXPECT_ANY_THROW(attention(a, cache.view, pool));
  a.n_head = 4;
  EXPECT_NO_THROW(attention(a, cache.view, pool));
  a.n_q = 0;
  EXPECT_NO_THROW(attention(a, cache.view, pool));
}

}  // namespace
}  // namespace hearth::ops
