// matmul: SIMD kernels against the scalar reference (exact integer parts, float accumulation
// within a stated bound), batch / thread / split invariance, the activation quantizers against
// quant's reference quantize_row, and end to end against ref::matmul.
#include "ops/matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <tuple>
#include <vector>

#include "kernel_test_util.h"
#include "ops/cpu_features.h"
#include "ops/packed_rows.h"
#include "ops/reference.h"
#include "quant/blocks.h"
#include "quant/dequantize.h"
#include "quant/half.h"
#include "quant/quantize.h"
#include "util/error.h"

namespace hearth::ops {
namespace {

using T = TensorType;

const T kAllTypes[] = {T::F32,  T::F16,  T::BF16, T::Q8_0, T::Q4_0, T::Q4_1,
                       T::Q5_0, T::Q5_1, T::Q4_K, T::Q5_K, T::Q6_K};
const int64_t kTokens[] = {1, 2, 3, 5, 8, 17};
const int64_t kRows[] = {1, 3, 7, 33, 100};

bool is_kquant(T t) {
  return t == T::Q4_K || t == T::Q5_K || t == T::Q6_K;
}
bool is_float(T t) {
  return t == T::F32 || t == T::F16 || t == T::BF16;
}

// Unoptimized (sanitizer) builds run the intrinsics ~100x slower: they sweep the same shapes
// except the 3072-wide ones, which optimized builds cover.
#ifdef NDEBUG
constexpr bool kFullSweep = true;
#else
constexpr bool kFullSweep = false;
#endif

std::vector<int64_t> widths_for(T t) {
  std::vector<int64_t> w;
  if (is_kquant(t))
    w = {256, 512, 768, 1024, 3072};
  else if (is_float(t))
    w = {1, 7, 8, 32, 44, 96, 1024, 3072};
  else
    w = {32, 64, 96, 160, 1024, 3072};
  if (!kFullSweep) w.pop_back();
  return w;
}

using test::LevelGuard;

bool have_avx2() {
  const auto& f = cpu_features();
  return f.avx2 && f.fma && f.f16c;
}

// Every level this CPU runs, highest first (Scalar last).
std::vector<SimdLevel> levels() {
  return test::levels_available({SimdLevel::Avx2Vnni, SimdLevel::Avx2, SimdLevel::Scalar});
}

std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, scale);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) {
    x = nd(rng);
    if (u(rng) < 0.01f) x *= 20.0f;  // occasional outliers
  }
  return v;
}

struct Weights {
  T type;
  int64_t n_rows = 0, n_cols = 0;
  std::vector<uint8_t> bytes;
  MatrixView view(int64_t rows) const {
    MatrixView m;
    m.name = "w";
    m.type = type;
    m.data = bytes.data();
    m.n_cols = n_cols;
    m.n_rows = rows;
    m.row_stride = row_bytes(type, n_cols);
    return m;
  }
};

// The view's rows also packed for the AVX2 kernels (packable types), the copy kept in `buf`.
MatrixView packed(MatrixView m, std::vector<uint8_t>& buf) {
  buf.resize(packed_bytes(m.type, m.n_rows, m.n_cols));
  pack_rows(m, buf.data());
  m.packed = buf.data();
  return m;
}

// Whether rows of type t and width cols have a packed layout (F16 / BF16 need whole 8-element
// chunks: other widths stay in the file's layout, as the model loader leaves them).
bool can_pack(T t, int64_t cols) {
  return packable(t) && cols % packed_block_cols(t) == 0;
}

// The layouts a type's matmul runs on: the file's, and the packed one where there is one.
std::vector<bool> layouts(T t, int64_t cols) {
  return can_pack(t, cols) ? std::vector<bool>{false, true} : std::vector<bool>{false};
}

Weights quantized_weights(T t, int64_t rows, int64_t cols, uint32_t seed) {
  Weights w{t, rows, cols, {}};
  const size_t rb = row_bytes(t, cols);
  w.bytes.resize(rb * static_cast<size_t>(rows));
  const auto f = random_floats(static_cast<size_t>(rows * cols), seed, 0.05f);
  for (int64_t r = 0; r < rows; ++r)
    quantize_row(t, f.data() + r * cols, w.bytes.data() + r * rb, cols);
  return w;
}

// Random block bytes (every integer level, including Q8_0's -128 and Q6_K's -128 scales) with
// finite f16 scales.
Weights raw_weights(T t, int64_t rows, int64_t cols, uint32_t seed) {
  Weights w{t, rows, cols, {}};
  const size_t rb = row_bytes(t, cols);
  w.bytes.resize(rb * static_cast<size_t>(rows));
  std::mt19937 rng(seed);
  for (auto& b : w.bytes) b = static_cast<uint8_t>(rng());
  std::uniform_real_distribution<float> u(-0.02f, 0.02f);
  auto put = [&](uint8_t* p) {
    const uint16_t h = f32_to_f16(u(rng));
    std::memcpy(p, &h, 2);
  };
  const size_t bb = traits(t).block_bytes;
  for (size_t off = 0; off < w.bytes.size(); off += bb) {
    uint8_t* b = w.bytes.data() + off;
    switch (t) {
      case T::Q8_0:
      case T::Q4_0:
      case T::Q5_0:
        put(b);
        break;
      case T::Q4_1:
      case T::Q5_1:
      case T::Q4_K:
      case T::Q5_K:
        put(b);
        put(b + 2);
        break;
      case T::Q6_K:
        put(b + offsetof(BlockQ6_K, d));
        break;
      default:
        break;
    }
  }
  return w;
}

// Σ over elements of the magnitudes the kernels actually accumulate, times |activation|:
// the scale for the SIMD-vs-scalar float tolerance.
std::vector<float> magnitudes(const MatrixView& w, int64_t r) {
  const int64_t n = w.n_cols;
  std::vector<float> m(static_cast<size_t>(n));
  const uint8_t* row = w.row(r);
  switch (w.type) {
    case T::Q4_1:
    case T::Q5_1: {
      const size_t bb = traits(w.type).block_bytes;
      std::vector<float> deq(32);
      for (int64_t b = 0; b < n / 32; ++b) {
        uint16_t mh;
        std::memcpy(&mh, row + b * bb + 2, 2);
        const float mn = f16_to_f32(mh);
        dequantize_row(w.type, row + b * bb, deq.data(), 32);
        for (int i = 0; i < 32; ++i) m[32 * b + i] = std::fabs(deq[i] - mn) + std::fabs(mn);
      }
      return m;
    }
    case T::Q4_K:
    case T::Q5_K: {
      const size_t bb = traits(w.type).block_bytes;
      std::vector<float> deq(256);
      for (int64_t s = 0; s < n / 256; ++s) {
        const uint8_t* p = row + s * bb;
        uint16_t mh;
        std::memcpy(&mh, p + 2, 2);
        dequantize_row(w.type, p, deq.data(), 256);
        for (int j = 0; j < 8; ++j) {
          uint8_t sc, mn;
          kquant_scale_min(j, p + 4, sc, mn);
          const float off = f16_to_f32(mh) * mn;
          for (int i = 0; i < 32; ++i)
            m[256 * s + 32 * j + i] = std::fabs(deq[32 * j + i] + off) + std::fabs(off);
        }
      }
      return m;
    }
    case T::Q6_K: {
      std::vector<float> deq(256);
      for (int64_t s = 0; s < n / 256; ++s) {
        BlockQ6_K b;
        std::memcpy(&b, row + s * sizeof(BlockQ6_K), sizeof(b));
        dequantize_row(w.type, &b, deq.data(), 256);
        for (int k = 0; k < 16; ++k) {
          const float ds = std::fabs(f16_to_f32(b.d) * b.scales[k]);
          for (int i = 0; i < 16; ++i)
            m[256 * s + 16 * k + i] = std::fabs(deq[16 * k + i]) + 64.0f * ds;
        }
      }
      return m;
    }
    case T::Q4_0:
    case T::Q5_0: {
      // Unsigned levels q·a and the offset·Σa term are accumulated separately.
      const size_t bb = traits(w.type).block_bytes;
      const float off = w.type == T::Q4_0 ? 8.0f : 16.0f;
      dequantize_row(w.type, row, m.data(), n);
      for (int64_t b = 0; b < n / 32; ++b) {
        uint16_t dh;
        std::memcpy(&dh, row + b * bb, 2);
        const float d = std::fabs(f16_to_f32(dh));
        for (int i = 0; i < 32; ++i) m[32 * b + i] = std::fabs(m[32 * b + i]) + 2.0f * off * d;
      }
      return m;
    }
    default:
      dequantize_row(w.type, row, m.data(), n);
      for (auto& v : m) v = std::fabs(v);
      return m;
  }
}

// Dequantized activations of token t.
std::vector<float> act_values(const QuantizedActivations& x, int64_t t) {
  std::vector<float> a(static_cast<size_t>(x.n_cols));
  if (x.type == T::F32) {
    std::memcpy(a.data(), activation_f32(x, t), a.size() * 4);
    return a;
  }
  const int64_t bs = x.type == T::Q8_0 ? 32 : 256;
  const int8_t* q = activation_qs(x, t);
  const float* d = activation_scales(x, t);
  for (int64_t i = 0; i < x.n_cols; ++i) a[i] = d[i / bs] * static_cast<float>(q[i]);
  return a;
}

int64_t float_steps(T type, int64_t n) {
  if (is_kquant(type)) return 2 * (n / 256) + 8;
  if (is_float(type)) return n / 8 + n % 8;
  return 2 * (n / 32);  // Q4_1/Q5_1 add two terms per block
}

// Σ|terms| of every (row, token): the scale of the SIMD-vs-scalar float tolerance.
std::vector<std::vector<double>> term_mass(const MatrixView& w, const QuantizedActivations& x) {
  std::vector<std::vector<float>> acts;
  for (int64_t t = 0; t < x.n_tok; ++t) acts.push_back(act_values(x, t));
  std::vector<std::vector<double>> mass(static_cast<size_t>(w.n_rows));
  for (int64_t r = 0; r < w.n_rows; ++r) {
    const auto mag = magnitudes(w, r);
    for (int64_t t = 0; t < x.n_tok; ++t) {
      double m = 0;
      for (int64_t i = 0; i < w.n_cols; ++i)
        m += static_cast<double>(mag[i]) * std::fabs(acts[t][i]);
      mass[r].push_back(m);
    }
  }
  return mass;
}

// |simd − scalar| <= (2·steps + 32)·2⁻²⁴·Σ|terms|.
void expect_close(const MatrixView& w, int64_t n_tok, const std::vector<std::vector<double>>& mass,
                  const float* got, const float* want, const std::string& what) {
  const double k =
      static_cast<double>(2 * float_steps(w.type, w.n_cols) + 32) * std::ldexp(1.0, -24);
  int bad = 0;
  for (int64_t r = 0; r < w.n_rows && bad < 5; ++r) {
    for (int64_t t = 0; t < n_tok; ++t) {
      const double m = mass[r][t];
      const float g = got[t * w.n_rows + r], e = want[t * w.n_rows + r];
      if (!(std::fabs(static_cast<double>(g) - e) <= k * m + 1e-30)) {
        ADD_FAILURE() << what << " row " << r << " tok " << t << ": simd " << g << " scalar " << e
                      << " tol " << k * m;
        ++bad;
      }
    }
  }
}

std::string label(T t, int64_t rows, int64_t cols, int64_t n_tok) {
  return std::string(type_name(t)) + " " + std::to_string(rows) + "x" + std::to_string(cols) +
         " n_tok=" + std::to_string(n_tok);
}

// -------------------------------------------------------------------------------------------

TEST(Matmul, ActivationTypes) {
  EXPECT_EQ(activation_type(T::Q4_0), T::Q8_0);
  EXPECT_EQ(activation_type(T::Q5_1), T::Q8_0);
  EXPECT_EQ(activation_type(T::Q4_K), T::Q8_K);
  EXPECT_EQ(activation_type(T::Q6_K), T::Q8_K);
  EXPECT_EQ(activation_type(T::F16), T::F32);
  EXPECT_EQ(activation_type(T::BF16), T::F32);
  for (T t : kAllTypes) EXPECT_TRUE(matmul_supported(t)) << type_name(t);
  EXPECT_FALSE(matmul_supported(T::Q2_K));
}

TEST(Matmul, QuantizeActivationsMatchesQuantizeRow) {
  for (T act : {T::Q8_0, T::Q8_K}) {
    const int64_t bs = act == T::Q8_0 ? 32 : 256;
    for (int64_t n : {bs, 2 * bs, 3 * bs, int64_t{1024}, int64_t{3072}}) {
      const int64_t n_tok = 5;
      auto x = random_floats(static_cast<size_t>(n * n_tok), 7 + static_cast<uint32_t>(n));
      // Special blocks: all zero, all NaN, an infinity, a tie between +max and -max, tiny
      // (f16-subnormal scales), huge (scale saturates).
      for (int64_t i = 0; i < bs; ++i) x[i] = 0.0f;
      if (n >= 2 * bs) {
        for (int64_t i = bs; i < 2 * bs; ++i) x[i] = std::ldexp(x[i], -30);
      }
      x[n + 3] = std::numeric_limits<float>::quiet_NaN();
      x[n + 5] = std::numeric_limits<float>::infinity();
      x[2 * n + 1] = 3.0f;
      x[2 * n + 2] = -3.0f;
      for (int64_t i = 0; i < bs; ++i) x[3 * n + i] = std::ldexp(x[3 * n + i], 26);
      for (int64_t i = 0; i < bs; ++i) x[4 * n + i] = std::numeric_limits<float>::quiet_NaN();

      QuantizedActivations a_simd, a_ref;
      quantize_activations(act, x.data(), n_tok, n, a_simd);
      quantize_activations_scalar(act, x.data(), n_tok, n, a_ref);
      ASSERT_EQ(a_simd.row_stride, activation_row_stride(act, n));
      ASSERT_EQ(a_simd.data, a_ref.data) << type_name(act) << " n=" << n;

      for (int64_t t = 0; t < n_tok; ++t) {
        std::vector<uint8_t> blocks(row_bytes(act, n));
        quantize_row(act, x.data() + t * n, blocks.data(), n);
        const int8_t* qs = activation_qs(a_simd, t);
        const float* d = activation_scales(a_simd, t);
        const int16_t* sums = activation_sums(a_simd, t);
        for (int64_t b = 0; b < n / bs; ++b) {
          if (act == T::Q8_0) {
            BlockQ8_0 blk;
            std::memcpy(&blk, blocks.data() + b * sizeof(blk), sizeof(blk));
            ASSERT_EQ(std::memcmp(qs + 32 * b, blk.qs, 32), 0) << "t=" << t << " b=" << b;
            ASSERT_EQ(d[b], f16_to_f32(blk.d)) << "t=" << t << " b=" << b;
            int s = 0;
            for (int8_t q : blk.qs) s += q;
            ASSERT_EQ(sums[b], s);
          } else {
            BlockQ8_K blk;
            std::memcpy(&blk, blocks.data() + b * sizeof(blk), sizeof(blk));
            ASSERT_EQ(std::memcmp(qs + 256 * b, blk.qs, 256), 0) << "t=" << t << " b=" << b;
            ASSERT_EQ(std::memcmp(&d[b], &blk.d, 4), 0) << "t=" << t << " b=" << b;
            ASSERT_EQ(std::memcmp(sums + 16 * b, blk.bsums, 32), 0);
          }
        }
      }
    }
  }
}

TEST(Matmul, QuantizeActivationsScaleRoundingOverManyMagnitudes) {
  // The f16 scale's round-up rule across normal, subnormal and saturating ranges.
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> e(-40, 30);
  std::vector<float> x(32 * 4096);
  for (size_t b = 0; b < 4096; ++b) {
    const int ex = e(rng);
    auto v = random_floats(32, static_cast<uint32_t>(b));
    for (int i = 0; i < 32; ++i) x[32 * b + i] = std::ldexp(v[i], ex);
  }
  // Blocks whose scale lands on f16 edges: near the largest finite value, past it, and in the
  // subnormal range.
  const float edges[] = {65470.0f,
                         65480.0f,
                         65490.0f,
                         65504.0f,
                         65519.0f,
                         65600.0f,
                         1e9f,
                         std::ldexp(1.0f, -24),
                         std::ldexp(1.5f, -24),
                         std::ldexp(1.0f, -25),
                         std::ldexp(3.0f, -20),
                         6.1e-5f,
                         6.2e-5f};
  for (size_t k = 0; k < std::size(edges); ++k) {
    float* b = x.data() + 32 * 8 * k;  // one per 256-block too
    b[5] = edges[k] * 127.0f;
    for (int i = 0; i < 32; ++i)
      if (i != 5) b[i] = std::fmin(std::fabs(b[i]), edges[k] * 126.0f) * (i % 2 ? 1.0f : -1.0f);
  }
  QuantizedActivations a_simd, a_ref;
  quantize_activations(T::Q8_0, x.data(), 4, 1024 * 32 / 32, a_simd);
  quantize_activations_scalar(T::Q8_0, x.data(), 4, 1024 * 32 / 32, a_ref);
  EXPECT_EQ(a_simd.data, a_ref.data);
  quantize_activations(T::Q8_K, x.data(), 4, 1024 * 32 / 32, a_simd);
  quantize_activations_scalar(T::Q8_K, x.data(), 4, 1024 * 32 / 32, a_ref);
  EXPECT_EQ(a_simd.data, a_ref.data);
}

TEST(Matmul, QuantizedRowRangesEqualTheWholeQuantization) {
  // prepare_activations + quantize_activation_rows over uneven ranges, filled out of order (as
  // threads would), give quantize_activations' bytes; a row range past the end is an error.
  for (TensorType act : {T::F32, T::Q8_0, T::Q8_K}) {
    const int64_t n = 512, n_tok = 13;
    const auto x = random_floats(static_cast<size_t>(n * n_tok), 21);
    QuantizedActivations whole, parts;
    quantize_activations(act, x.data(), n_tok, n, whole);
    parts.data.assign(7, 0xAB);  // stale bytes from an earlier, smaller use
    prepare_activations(act, n_tok, n, parts);
    for (auto [t0, t1] : {std::pair<int64_t, int64_t>{8, 13}, {0, 1}, {3, 8}, {1, 3}, {5, 5}})
      quantize_activation_rows(x.data(), t0, t1, parts);
    EXPECT_EQ(parts.type, whole.type);
    EXPECT_EQ(parts.row_stride, whole.row_stride);
    EXPECT_EQ(parts.data, whole.data) << type_name(act);
    EXPECT_THROW(quantize_activation_rows(x.data(), 12, 14, parts), Error);
  }
}

// The main sweep: every type × n_tok × rows × widths, SIMD against the scalar reference, on
// quantizer-made weights and on random block bytes.
TEST(Matmul, SimdMatchesScalarReference) {
  if (!have_avx2()) GTEST_SKIP() << "no AVX2";
  LevelGuard guard;
  ThreadPool pool(2);
  for (T type : kAllTypes) {
    for (int64_t cols : widths_for(type)) {
      for (int variant = 0; variant < (is_float(type) ? 1 : 2); ++variant) {
        const Weights w = variant == 0 ? quantized_weights(type, 100, cols, 11)
                                       : raw_weights(type, 100, cols, 12);
        const auto x = random_floats(static_cast<size_t>(17 * cols), 13);
        QuantizedActivations a17;
        quantize_activations(activation_type(type), x.data(), 17, cols, a17);
        const auto mass = term_mass(w.view(100), a17);  // rows and tokens are prefixes
        for (int64_t n_tok : kTokens) {
          QuantizedActivations a;
          quantize_activations(activation_type(type), x.data(), n_tok, cols, a);
          for (int64_t rows : kRows) {
            for (bool pack : layouts(type, cols)) {
              std::vector<uint8_t> buf;
              const MatrixView m = pack ? packed(w.view(rows), buf) : w.view(rows);
              std::vector<float> y_simd(static_cast<size_t>(n_tok * rows), -1.0f);
              std::vector<float> y_ref(y_simd.size(), -2.0f);
              const std::string what = label(type, rows, cols, n_tok) + (variant ? " raw" : "") +
                                       (pack ? " packed" : "");
              set_simd_level(SimdLevel::Avx2);
              matmul(m, a, y_simd.data(), pool);
              matmul_scalar(m, a, y_ref.data());
              expect_close(m, n_tok, mass, y_simd.data(), y_ref.data(), what);
              // Levels above AVX2 change instructions, never results.
              for (SimdLevel l : levels()) {
                if (l <= SimdLevel::Avx2) continue;
                for (bool evex : test::vnni_encodings()) {
                  std::vector<float> y_l(y_simd.size(), -3.0f);
                  set_simd_level(l);
                  set_vnni_evex(evex);
                  matmul(m, a, y_l.data(), pool);
                  EXPECT_EQ(std::memcmp(y_l.data(), y_simd.data(), y_l.size() * 4), 0)
                      << what << " " << simd_level_name(l) << " differs from avx2";
                }
              }
              if (HasFailure()) return;
            }
          }
        }
      }
    }
  }
}

// With unit scales every term is an integer: the SIMD and scalar paths must both produce the
// exact integer dot products.
TEST(Matmul, IntegerDotsAreExact) {
  LevelGuard guard;
  ThreadPool pool(1);
  std::mt19937 rng(21);
  const uint16_t one = f32_to_f16(1.0f);
  for (T type : {T::Q8_0, T::Q4_0, T::Q5_0, T::Q4_1, T::Q5_1, T::Q4_K, T::Q5_K, T::Q6_K}) {
    const int64_t cols = is_kquant(type) ? 512 : 96, rows = 7, n_tok = 5;
    Weights w = raw_weights(type, rows, cols, 22);
    // Unit scales (and, for the offset formats, unit mins).
    const size_t bb = traits(type).block_bytes;
    for (size_t off = 0; off < w.bytes.size(); off += bb) {
      uint8_t* b = w.bytes.data() + off;
      if (type == T::Q6_K) {
        std::memcpy(b + offsetof(BlockQ6_K, d), &one, 2);
      } else {
        std::memcpy(b, &one, 2);
        if (type == T::Q4_1 || type == T::Q5_1 || type == T::Q4_K || type == T::Q5_K)
          std::memcpy(b + 2, &one, 2);
      }
      if (type == T::Q4_K || type == T::Q5_K)  // keep sums below 2^24
        for (int k = 0; k < 12; ++k) b[4 + k] &= 0x33;
      if (type == T::Q6_K)
        for (int k = 0; k < 16; ++k)
          b[offsetof(BlockQ6_K, scales) + k] =
              static_cast<uint8_t>(static_cast<int8_t>(rng() % 41) - 20);
    }
    std::vector<uint8_t> buf;
    const MatrixView plain = w.view(rows);
    const MatrixView pk = can_pack(type, cols) ? packed(plain, buf) : plain;
    // Activations with unit scale and random levels (bsums / sums consistent).
    QuantizedActivations a;
    const auto xf = random_floats(static_cast<size_t>(n_tok * cols), 23);
    quantize_activations_scalar(activation_type(type), xf.data(), n_tok, cols, a);
    const int64_t abs = activation_type(type) == T::Q8_0 ? 32 : 256;
    for (int64_t t = 0; t < n_tok; ++t) {
      auto* q = const_cast<int8_t*>(activation_qs(a, t));
      auto* d = const_cast<float*>(activation_scales(a, t));
      auto* s = const_cast<int16_t*>(activation_sums(a, t));
      for (int64_t i = 0; i < cols; ++i)
        q[i] = static_cast<int8_t>(static_cast<int>(rng() % 255) - 127);
      for (int64_t b = 0; b < cols / abs; ++b) d[b] = 1.0f;
      const int64_t g = abs == 32 ? 32 : 16;
      for (int64_t k = 0; k < cols / g; ++k) {
        int sum = 0;
        for (int64_t i = 0; i < g; ++i) sum += q[k * g + i];
        s[k] = static_cast<int16_t>(sum);
      }
    }
    // Expected: Σ dequantized weight (an integer with unit scales) × q.
    std::vector<float> deq(static_cast<size_t>(cols));
    std::vector<float> y(static_cast<size_t>(rows * n_tok));
    for (SimdLevel level : levels())
      for (bool evex : test::vnni_encodings())
        for (bool pack : layouts(type, cols)) {
          const MatrixView& m = pack ? pk : plain;
          set_simd_level(level);
          set_vnni_evex(evex);
          matmul(m, a, y.data(), pool);
          for (int64_t r = 0; r < rows; ++r) {
            dequantize_row(type, m.row(r), deq.data(), cols);
            for (int64_t t = 0; t < n_tok; ++t) {
              int64_t want = 0;
              for (int64_t i = 0; i < cols; ++i) {
                ASSERT_EQ(deq[i], std::round(deq[i]));
                want += static_cast<int64_t>(deq[i]) * activation_qs(a, t)[i];
              }
              ASSERT_EQ(y[t * rows + r], static_cast<float>(want))
                  << type_name(type) << " " << simd_level_name(level) << (pack ? " packed" : "")
                  << " r=" << r << " t=" << t;
            }
          }
        }
  }
}

// y[t][r] is bit-identical whatever n_tok, the thread count and the row split are.
TEST(Matmul, BatchThreadAndSplitInvariance) {
  LevelGuard guard;
  ThreadPool pool1(1), pool2(2), pool3(3);
  for (SimdLevel level : levels()) {
    set_simd_level(level);
    for (T type : kAllTypes) {
      for (int64_t cols : {is_kquant(type) ? int64_t{512} : int64_t{96}, int64_t{1024}})
        for (bool pack : layouts(type, cols)) {
          const int64_t rows = 100, n_tok = 17;
          const Weights w = quantized_weights(type, rows, cols, 31);
          std::vector<uint8_t> buf;
          const MatrixView m = pack ? packed(w.view(rows), buf) : w.view(rows);
          const auto x = random_floats(static_cast<size_t>(n_tok * cols), 32);
          std::vector<float> y17(static_cast<size_t>(rows * n_tok));
          matmul(m, x.data(), n_tok, y17.data(), pool2);
          const std::string what = std::string(type_name(type)) + " " + simd_level_name(level) +
                                   " cols=" + std::to_string(cols) + (pack ? " packed" : "");
          // One token at a time, every thread count.
          for (ThreadPool* p : {&pool1, &pool2, &pool3}) {
            std::vector<float> y1(static_cast<size_t>(rows));
            for (int64_t t = 0; t < n_tok; ++t) {
              matmul(m, x.data() + t * cols, 1, y1.data(), *p);
              ASSERT_EQ(std::memcmp(y1.data(), y17.data() + t * rows, rows * 4), 0)
                  << what << " t=" << t << " threads=" << p->size();
            }
          }
          // Other batch sizes and threads: every prefix/suffix split of the 17 tokens.
          for (int64_t n : {2, 3, 5, 8, 16}) {
            std::vector<float> yn(static_cast<size_t>(rows * n));
            matmul(m, x.data() + (n_tok - n) * cols, n, yn.data(), pool3);
            ASSERT_EQ(std::memcmp(yn.data(), y17.data() + (n_tok - n) * rows, yn.size() * 4), 0)
                << what << " n=" << n;
          }
          // Odd row splits on the calling thread.
          QuantizedActivations a;
          quantize_activations(activation_type(type), x.data(), n_tok, cols, a);
          std::vector<float> ys(y17.size(), 0.0f);
          for (int64_t r0 = 0; r0 < rows;) {
            const int64_t r1 = std::min(rows, r0 + 1 + (r0 * 7) % 13);
            matmul_rows(m, a, ys.data(), r0, r1);
            r0 = r1;
          }
          ASSERT_EQ(std::memcmp(ys.data(), y17.data(), ys.size() * 4), 0) << what << " split";
          // Pre-quantized and float entry points agree bit for bit.
          std::vector<float> yq(y17.size());
          matmul(m, a, yq.data(), pool1);
          ASSERT_EQ(std::memcmp(yq.data(), y17.data(), yq.size() * 4), 0) << what << " quantized";
        }
    }
  }
}

// End to end against the dequantize-and-f32 reference: the only difference allowed is the
// activation quantization error Σ|w_i|·|x_i − a_i| plus float rounding.
TEST(Matmul, MatchesDequantizedReference) {
  LevelGuard guard;
  ThreadPool pool(2);
  for (SimdLevel level : levels()) {
    set_simd_level(level);
    for (T type : kAllTypes) {
      const int64_t cols = is_kquant(type) ? 768 : (is_float(type) ? 100 : 1024);
      const int64_t rows = 33, n_tok = 3;
      const Weights w = quantized_weights(type, rows, cols, 41);
      const MatrixView m = w.view(rows);
      const auto x = random_floats(static_cast<size_t>(n_tok * cols), 42);
      std::vector<float> y(static_cast<size_t>(rows * n_tok)), yr(y.size());
      matmul(m, x.data(), n_tok, y.data(), pool);
      ref::matmul(m, x.data(), n_tok, yr.data());
      QuantizedActivations a;
      quantize_activations(activation_type(type), x.data(), n_tok, cols, a);
      std::vector<float> deq(static_cast<size_t>(cols));
      for (int64_t r = 0; r < rows; ++r) {
        dequantize_row(type, m.row(r), deq.data(), cols);
        for (int64_t t = 0; t < n_tok; ++t) {
          const auto av = act_values(a, t);
          double qerr = 0, mass = 0;
          for (int64_t i = 0; i < cols; ++i) {
            qerr += std::fabs(static_cast<double>(deq[i])) * std::fabs(x[t * cols + i] - av[i]);
            mass += std::fabs(static_cast<double>(deq[i]) * x[t * cols + i]);
          }
          EXPECT_NEAR(y[t * rows + r], yr[t * rows + r], qerr * 1.001 + 1e-5 * mass + 1e-30)
              << type_name(type) << " " << simd_level_name(level) << " r=" << r << " t=" << t;
        }
      }
    }
  }
}

// Rows padded beyond their packed size (row_stride > row_bytes) are read at their stride.
TEST(Matmul, PaddedRowStride) {
  LevelGuard guard;
  ThreadPool pool(2);
  for (SimdLevel level : levels()) {
    set_simd_level(level);
    for (T type : kAllTypes) {
      const int64_t cols = is_kquant(type) ? 512 : 96, rows = 37, n_tok = 6;
      const Weights w = quantized_weights(type, rows, cols, 51);
      const size_t rb = row_bytes(type, cols), stride = rb + 40;
      std::vector<uint8_t> padded(stride * rows, 0xAB);
      for (int64_t r = 0; r < rows; ++r)
        std::memcpy(padded.data() + r * stride, w.bytes.data() + r * rb, rb);
      MatrixView mp = w.view(rows);
      mp.data = padded.data();
      mp.row_stride = stride;
      const auto x = random_floats(static_cast<size_t>(n_tok * cols), 52);
      std::vector<float> y(static_cast<size_t>(rows * n_tok)), yp(y.size());
      matmul(w.view(rows), x.data(), n_tok, y.data(), pool);
      matmul(mp, x.data(), n_tok, yp.data(), pool);
      ASSERT_EQ(std::memcmp(y.data(), yp.data(), y.size() * 4), 0)
          << type_name(type) << " " << simd_level_name(level);
    }
  }
}

TEST(Matmul, RejectsBadInput) {
  ThreadPool pool(1);
  const Weights w = quantized_weights(T::Q8_0, 4, 64, 1);
  const auto x = random_floats(64, 2);
  std::vector<float> y(4);
  QuantizedActivations a;
  quantize_activations(T::Q8_K, random_floats(256, 3).data(), 1, 256, a);
  EXPECT_THROW(matmul(w.view(4), a, y.data(), pool), Error);  // wrong activation type
  quantize_activations(T::Q8_0, random_floats(96, 3).data(), 1, 96, a);
  EXPECT_THROW(matmul(w.view(4), a, y.data(), pool), Error);  // wrong width
  EXPECT_THROW(quantize_activations(T::Q8_0, x.data(), 1, 40, a), Error);
  MatrixView bad = w.view(4);
  bad.type = T::Q2_K;
  EXPECT_THROW(matmul(bad, x.data(), 1, y.data(), pool), Error);
}

// matmul_group runs several products over the same activations in one parallel region: each
// output is bit-identical to its own matmul, across types, layouts, empty matrices and threads.
// Decode's products (up to four tokens) split as one contiguous share per thread with stealing
// (ops/share_split.h); wider batches, and groups whose products do not end on a slice, keep the
// chunk list. Either way every row equals the one-thread product, on every level: a group of
// three whose last product ends mid-slice, one whose first does not end on a slice, 1-5 tokens.
TEST(Matmul, DecodeSharesMatchTheOneThreadProduct) {
  LevelGuard guard;
  ThreadPool pool1(1), pool2(2), pool3(3);
  const int64_t cols = 1024;
  for (SimdLevel level : levels()) {
    set_simd_level(level);
    for (T type : {T::Q8_0, T::Q4_0, T::Q4_K, T::Q6_K, T::F16}) {
      for (const std::vector<int64_t>& rows :
           {std::vector<int64_t>{512, 192, 1000}, std::vector<int64_t>{1000, 512}}) {
        std::vector<Weights> ws;
        std::vector<std::vector<uint8_t>> bufs(rows.size());
        std::vector<MatrixView> ms;
        for (size_t i = 0; i < rows.size(); ++i)
          ws.push_back(quantized_weights(type, rows[i], cols, 60 + i));
        for (size_t i = 0; i < rows.size(); ++i) {
          const MatrixView v = ws[i].view(rows[i]);
          ms.push_back(can_pack(type, cols) ? packed(v, bufs[i]) : v);
        }
        for (int64_t n_tok = 1; n_tok <= 5; ++n_tok) {
          const auto x = random_floats(static_cast<size_t>(n_tok * cols), 70 + n_tok);
          QuantizedActivations a;
          quantize_activations(activation_type(type), x.data(), n_tok, cols, a);
          std::vector<std::vector<float>> want(rows.size());
          for (size_t i = 0; i < rows.size(); ++i) {
            want[i].resize(static_cast<size_t>(rows[i] * n_tok));
            matmul(ms[i], a, want[i].data(), pool1);
          }
          for (ThreadPool* p : {&pool2, &pool3}) {
            std::vector<std::vector<float>> got(rows.size());
            std::vector<MatmulOut> outs;
            for (size_t i = 0; i < rows.size(); ++i) {
              got[i].assign(want[i].size() + 1, -3.0f);
              outs.push_back({&ms[i], got[i].data()});
            }
            matmul_group(outs, a, *p);
            for (size_t i = 0; i < rows.size(); ++i) {
              EXPECT_EQ(std::memcmp(want[i].data(), got[i].data(), want[i].size() * 4), 0)
                  << type_name(type) << " " << simd_level_name(level) << " product " << i
                  << " n_tok=" << n_tok << " threads=" << p->size();
              EXPECT_EQ(got[i].back(), -3.0f) << "wrote past the output";
            }
          }
        }
      }
    }
  }
}

TEST(Matmul, GroupMatchesSeparateProducts) {
  ThreadPool pool1(1), pool2(2);
  const int64_t cols = 512, n_tok = 5;
  const auto x = random_floats(static_cast<size_t>(n_tok * cols), 41);
  for (T act : {T::Q8_0, T::Q8_K, T::F32}) {
    const std::vector<T> types = act == T::Q8_0   ? std::vector<T>{T::Q8_0, T::Q4_0, T::Q5_1}
                                 : act == T::Q8_K ? std::vector<T>{T::Q4_K, T::Q6_K, T::Q5_K}
                                                  : std::vector<T>{T::F16, T::F32, T::BF16};
    const std::vector<int64_t> rows = {100, 0, 37};
    std::vector<Weights> ws;
    std::vector<std::vector<uint8_t>> bufs(types.size());
    std::vector<MatrixView> ms;
    for (size_t i = 0; i < types.size(); ++i)
      ws.push_back(quantized_weights(types[i], std::max<int64_t>(rows[i], 1), cols, 50 + i));
    for (size_t i = 0; i < types.size(); ++i) {
      const MatrixView v = ws[i].view(rows[i]);
      ms.push_back(can_pack(types[i], cols) && rows[i] > 0 ? packed(v, bufs[i]) : v);
    }
    QuantizedActivations a;
    quantize_activations(act, x.data(), n_tok, cols, a);
    for (ThreadPool* p : {&pool1, &pool2}) {
      std::vector<std::vector<float>> sep, grp;
      std::vector<MatmulOut> outs;
      for (size_t i = 0; i < ms.size(); ++i) {
        sep.emplace_back(static_cast<size_t>(rows[i] * n_tok) + 1, -1.0f);
        grp.emplace_back(static_cast<size_t>(rows[i] * n_tok) + 1, -2.0f);
      }
      for (size_t i = 0; i < ms.size(); ++i) {
        matmul(ms[i], a, sep[i].data(), *p);
        outs.push_back({&ms[i], grp[i].data()});
      }
      matmul_group(outs, a, *p);
      for (size_t i = 0; i < ms.size(); ++i) {
        const size_t n = static_cast<size_t>(rows[i] * n_tok);
        EXPECT_EQ(std::memcmp(sep[i].data(), grp[i].data(), n * 4), 0)
            << type_name(types[i]) << " threads=" << p->size();
        EXPECT_EQ(grp[i][n], -2.0f) << "wrote past the output";
      }
    }
  }
  // Mismatched activations and too many products are clear errors.
  const Weights w = quantized_weights(T::Q4_K, 4, cols, 3);
  const MatrixView m = w.view(4);
  QuantizedActivations a;
  quantize_activations(T::Q8_0, x.data(), 1, cols, a);
  std::vector<float> y(4);
  const MatmulOut one[] = {{&m, y.data()}};
  EXPECT_THROW(matmul_group(one, a, pool2), Error);
  quantize_activations(T::Q8_K, x.data(), 1, cols, a);
  const std::vector<MatmulOut> nine(9, MatmulOut{&m, y.data()});
  EXPECT_THROW(matmul_group(nine, a, pool2), Error);
}

// F16 / BF16 rows packed in groups of 8: each row's 8-element chunks side by side, 128 bytes a
// chunk, the last group padded with zero rows (ops/packed_rows.h).
TEST(PackedRows, HalfFloatRowsSideBySide) {
  for (T type : {T::F16, T::BF16}) {
    const int64_t rows = 11, cols = 24;
    const Weights w = quantized_weights(type, rows, cols, 5);
    std::vector<uint8_t> buf;
    const MatrixView m = packed(w.view(rows), buf);
    ASSERT_EQ(buf.size(), size_t{2 * 3 * 128}) << type_name(type);
    for (int64_t g = 0; g < 2; ++g)
      for (int64_t c = 0; c < 3; ++c)
        for (int64_t r = 0; r < 8; ++r)
          for (int64_t e = 0; e < 8; ++e) {
            uint16_t got, want = 0;
            std::memcpy(&got, m.packed + ((g * 3 + c) * 128 + 16 * r + 2 * e), 2);
            if (8 * g + r < rows) std::memcpy(&want, m.row(8 * g + r) + 2 * (8 * c + e), 2);
            ASSERT_EQ(got, want) << type_name(type) << " row " << 8 * g + r << " col " << 8 * c + e;
          }
  }
  // A width that is not a whole number of chunks has no packed layout.
  const Weights odd = quantized_weights(T::F16, 8, 12, 6);
  std::vector<uint8_t> buf(packed_bytes(T::F16, 8, 8));
  EXPECT_THROW(pack_rows(odd.view(8), buf.data()), Error);
}

TEST(Matmul, EmptyShapes) {
  ThreadPool pool(2);
  const Weights w = quantized_weights(T::Q4_0, 8, 64, 1);
  std::vector<float> y(8, 5.0f);
  matmul(w.view(0), random_floats(64, 1).data(), 1, y.data(), pool);
  matmul(w.view(8), random_floats(64, 1).data(), 0, y.data(), pool);
  EXPECT_EQ(y[0], 5.0f);
}

// matmul_kernel_name says which kernel runs: the packed formats on the VNNI builds, the rest
// on AVX2, everything on the scalar reference at Scalar.
TEST(MatmulKernelName, NamesTheKernelOfEachLevel) {
  LevelGuard guard;
  const Weights q8 = quantized_weights(T::Q8_0, 16, 256, 1);
  const Weights f32 = quantized_weights(T::F32, 16, 256, 2);
  std::vector<uint8_t> buf;
  const MatrixView q8_packed = packed(q8.view(16), buf);
  for (SimdLevel level :
       test::levels_available({SimdLevel::Scalar, SimdLevel::Avx2, SimdLevel::Avx2Vnni})) {
    set_simd_level(level);
    SCOPED_TRACE(simd_level_name(level));
    EXPECT_STREQ(matmul_kernel_name(f32.view(16)), level == SimdLevel::Scalar ? "scalar" : "avx2");
    EXPECT_STREQ(matmul_kernel_name(q8.view(16)), level == SimdLevel::Scalar ? "scalar" : "avx2");
    if (level != SimdLevel::Avx2Vnni) {
      EXPECT_STREQ(matmul_kernel_name(q8_packed), level == SimdLevel::Scalar ? "scalar" : "avx2");
      continue;
    }
    for (bool evex : test::vnni_encodings()) {
      set_vnni_evex(evex);
      EXPECT_STREQ(matmul_kernel_name(q8_packed), vnni_evex() ? "avx512-vnni" : "avx-vnni");
    }
  }
}

}  // namespace
}  // namespace hearth::ops
