// The recurrent-layer kernels (ops/recurrent.h) at every SIMD level the CPU has against the
// scalar references: conv_taps and delta_rule_step bit-exact (same FMAs in the same order);
// silu_inplace and sigmoid_gate within 4 ulp (vector exp, <= 2 ulp), gelu_mul within 4 ulp plus
// its argument's amplification (below). The scalar
// versions are checked against the math in double: the delta rule against the README's
// formulas (S = e^g S; S += k (beta (v - Sᵀk))ᵀ; o = Sᵀq), GELU against 0.5x(1 + tanh(...)).
#include "ops/recurrent.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernel_test_util.h"
#include "ops/cpu_features.h"

namespace hearth::ops {
namespace {

using test::LevelGuard;
using test::random_vec;
using test::ulp_diff;

// Runs f at scalar and at level l; returns both results.
template <typename F>
std::pair<std::vector<float>, std::vector<float>> scalar_and(SimdLevel l, F f) {
  LevelGuard g;
  set_simd_level(SimdLevel::Scalar);
  auto a = f();
  set_simd_level(l);
  auto b = f();
  return {a, b};
}

TEST(Recurrent, ConvTapsBitExactAcrossLevels) {
  for (int64_t n : {1, 7, 64, 100, 512}) {
    for (int64_t K : {1, 3, 4}) {
      const auto taps = random_vec(static_cast<size_t>(K * (n + 5)), 1);
      std::vector<std::vector<float>> in;
      std::vector<const float*> rows;
      for (int64_t i = 0; i < K; ++i) in.push_back(random_vec(static_cast<size_t>(n), 10 + i));
      for (auto& r : in) rows.push_back(r.data());
      auto run = [&] {
        std::vector<float> out(static_cast<size_t>(n));
        conv_taps(rows.data(), taps.data(), n + 5, K, out.data(), n);
        return out;
      };
      // Scalar against the plain sum in double.
      {
        LevelGuard g;
        set_simd_level(SimdLevel::Scalar);
        const auto out = run();
        for (int64_t c = 0; c < n; ++c) {
          double want = 0;
          for (int64_t i = 0; i < K; ++i) want += double(taps[i * (n + 5) + c]) * in[i][c];
          ASSERT_NEAR(out[c], want, 1e-5 * (1 + std::fabs(want)));
        }
      }
      for (SimdLevel l : test::levels_available({SimdLevel::Avx2, SimdLevel::Avx2Vnni})) {
        auto [a, b] = scalar_and(l, run);
        ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0) << n << " " << K;
      }
    }
  }
}

TEST(Recurrent, DeltaRuleStepBitExactAcrossLevelsAndMatchesFormula) {
  for (const auto& dims : {std::pair<int64_t, int64_t>{64, 64}, {128, 128}, {16, 24}, {8, 5}}) {
    const int64_t dk = dims.first, dv = dims.second;  // named copies: lambdas capture them
    SCOPED_TRACE(std::to_string(dk) + "x" + std::to_string(dv));
    const auto S0 = random_vec(static_cast<size_t>(dk * dv), 3, 0.3f);
    const auto q = random_vec(static_cast<size_t>(dk), 4, 0.2f);
    const auto k = random_vec(static_cast<size_t>(dk), 5, 0.2f);
    const auto v = random_vec(static_cast<size_t>(dv), 6);
    const float decay = 0.83f, beta = 0.37f;
    // Three tokens in a row (the state carries over), returning state then outputs.
    auto run = [&] {
      std::vector<float> S = S0, o(static_cast<size_t>(3 * dv));
      for (int t = 0; t < 3; ++t)
        delta_rule_step(S.data(), q.data(), k.data(), v.data(), decay, beta, o.data() + t * dv, dk,
                        dv);
      S.insert(S.end(), o.begin(), o.end());
      return S;
    };
    // The formula in double.
    std::vector<double> S(S0.begin(), S0.end()), o(static_cast<size_t>(3 * dv));
    for (int t = 0; t < 3; ++t) {
      for (auto& s : S) s *= decay;
      for (int64_t c = 0; c < dv; ++c) {
        double kv = 0;
        for (int64_t i = 0; i < dk; ++i) kv += S[i * dv + c] * k[i];
        const double delta = beta * (v[c] - kv);
        for (int64_t i = 0; i < dk; ++i) S[i * dv + c] += k[i] * delta;
        double acc = 0;
        for (int64_t i = 0; i < dk; ++i) acc += S[i * dv + c] * q[i];
        o[t * dv + c] = acc;
      }
    }
    S.insert(S.end(), o.begin(), o.end());
    {
      LevelGuard g;
      set_simd_level(SimdLevel::Scalar);
      const auto got = run();
      for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], S[i], 1e-5) << i;
    }
    for (SimdLevel l : test::levels_available({SimdLevel::Avx2, SimdLevel::Avx2Vnni})) {
      auto [a, b] = scalar_and(l, run);
      ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0) << simd_level_name(l);
    }
  }
}

// The multi-token kernel (one walk of S per token in AVX2) gives the bits of delta_rule_step
// called token by token at the scalar level, for any token count.
TEST(Recurrent, DeltaRuleTokensEqualsStepByStep) {
  const int64_t dk = 64, dv = 64, n = 9, stride = 3 * 64 + 5, gs = 3;
  const auto S0 = random_vec(static_cast<size_t>(dk * dv), 13, 0.3f);
  const auto qkv = random_vec(static_cast<size_t>(n * stride), 14, 0.2f);
  std::vector<float> decay(static_cast<size_t>(n * gs)), beta(static_cast<size_t>(n * gs));
  for (size_t i = 0; i < decay.size(); ++i) {
    decay[i] = 0.5f + 0.05f * static_cast<float>(i % 9);
    beta[i] = 0.1f + 0.07f * static_cast<float>(i % 11);
  }
  std::vector<float> want_S = S0, want_o(static_cast<size_t>(n * dv));
  {
    LevelGuard g;
    set_simd_level(SimdLevel::Scalar);
    for (int64_t t = 0; t < n; ++t)
      delta_rule_step(want_S.data(), &qkv[t * stride], &qkv[t * stride + dk],
                      &qkv[t * stride + 2 * dk], decay[t * gs], beta[t * gs], &want_o[t * dv], dk,
                      dv);
  }
  std::vector<SimdLevel> all = test::levels_available({SimdLevel::Avx2, SimdLevel::Avx2Vnni});
  all.push_back(SimdLevel::Scalar);
  for (SimdLevel l : all) {
    for (int64_t split : {int64_t{1}, int64_t{4}, n}) {  // chunked calls: same bits
      LevelGuard g;
      set_simd_level(l);
      std::vector<float> S = S0, o(static_cast<size_t>(n * dv));
      for (int64_t t0 = 0; t0 < n; t0 += split) {
        DeltaRuleTokens a;
        a.q = &qkv[t0 * stride];
        a.k = a.q + dk;
        a.v = a.q + 2 * dk;
        a.qkv_stride = stride;
        a.decay = &decay[t0 * gs];
        a.beta = &beta[t0 * gs];
        a.gate_stride = gs;
        a.o = &o[t0 * dv];
        a.o_stride = dv;
        a.n = std::min(split, n - t0);
        delta_rule(S.data(), a, dk, dv);
      }
      ASSERT_EQ(std::memcmp(S.data(), want_S.data(), S.size() * 4), 0) << simd_level_name(l);
      ASSERT_EQ(std::memcmp(o.data(), want_o.data(), o.size() * 4), 0) << simd_level_name(l);
    }
  }
}

TEST(Recurrent, ActivationsWithinUlpsAcrossLevels) {
  for (int64_t n : {1, 9, 256, 1003}) {
    const auto x = random_vec(static_cast<size_t>(n), 7, 3.0f);
    const auto u = random_vec(static_cast<size_t>(n), 8);
    // GELU against the tanh formula in double (scalar level).
    {
      LevelGuard g;
      set_simd_level(SimdLevel::Scalar);
      std::vector<float> gg = x;
      gelu_mul(gg.data(), u.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        const double xi = x[i];
        const double want =
            0.5 * xi * (1 + std::tanh(std::sqrt(2 / M_PI) * (xi + 0.044715 * xi * xi * xi))) * u[i];
        ASSERT_NEAR(gg[i], want, 1e-6 * (1 + std::fabs(want))) << x[i];
      }
    }
    for (SimdLevel l : test::levels_available({SimdLevel::Avx2, SimdLevel::Avx2Vnni})) {
      // GELU's e^(-2y) turns one rounding of its argument 2y into |2y| ulps of the result, so
      // it is held to 4 ulp plus that (relative 2^-23 per unit of |2y|).
      auto check = [&](auto f, const char* name, bool gelu = false) {
        auto [a, b] = scalar_and(l, f);
        for (int64_t i = 0; i < n; ++i) {
          if (std::fabs(a[i]) < 1e-30f && std::fabs(b[i]) < 1e-30f) continue;
          const double xi = x[i];
          const double y2 = gelu ? 1.6 * std::fabs(xi + 0.044715 * xi * xi * xi) : 0.0;
          const double err = std::fabs(double(a[i]) - b[i]);
          if (gelu && err <= (4 + y2) * 1.2e-7 * std::fabs(a[i])) continue;
          ASSERT_LE(ulp_diff(a[i], b[i]), 4) << name << " " << x[i] << ": " << a[i] << " " << b[i];
        }
      };
      check(
          [&] {
            auto y = x;
            silu_inplace(y.data(), n);
            return y;
          },
          "silu");
      check(
          [&] {
            auto y = u;
            sigmoid_gate(y.data(), x.data(), n);
            return y;
          },
          "sigmoid_gate");
      check(
          [&] {
            auto y = x;
            gelu_mul(y.data(), u.data(), n);
            return y;
          },
          "gelu_mul", true);
    }
  }
}

}  // namespace
}  // namespace hearth::ops
