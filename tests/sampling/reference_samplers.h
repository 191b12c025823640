// Plain reference samplers for the tests: full sorts, whole-history rebuilds, no shortcuts.
// They use the same float steps as the library where a boundary depends on rounding (a
// probability is float(exp(logit - max)) / double sum), so kept sets compare exactly.
#pragma once

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <vector>

#include "sampling/candidates.h"

namespace hearth::test {

using Cands = std::vector<Candidate>;

inline Cands all_tokens(const std::vector<float>& logits) {
  Cands c;
  for (size_t i = 0; i < logits.size(); ++i)
    c.push_back({static_cast<int32_t>(i), logit_key(logits[i])});
  return c;
}

inline Cands sorted_copy(Cands c) {
  std::sort(c.begin(), c.end(), better);
  return c;
}

inline Cands by_token(Cands c) {
  std::sort(c.begin(), c.end(),
            [](const Candidate& a, const Candidate& b) { return a.token < b.token; });
  return c;
}

// float(exp(l - max)) / double(sum), in the given order.
inline std::vector<double> ref_probs(const Cands& c) {
  float mx = -INFINITY;
  for (const auto& x : c) mx = std::max(mx, x.logit);
  std::vector<double> p(c.size());
  if (mx == -INFINITY) {
    std::fill(p.begin(), p.end(), 1.0 / static_cast<double>(c.size()));
    return p;
  }
  double sum = 0;
  for (size_t i = 0; i < c.size(); ++i) sum += static_cast<double>(std::exp(c[i].logit - mx));
  for (size_t i = 0; i < c.size(); ++i) p[i] = static_cast<double>(std::exp(c[i].logit - mx)) / sum;
  return p;
}

// Probabilities stored as float, as the library's softmax does (all -inf: uniform).
inline std::vector<float> ref_probs_float(const Cands& c) {
  std::vector<float> pf(c.size());
  float mx = -INFINITY;
  for (const auto& x : c) mx = std::max(mx, x.logit);
  if (mx == -INFINITY) {
    std::fill(pf.begin(), pf.end(), 1.0f / static_cast<float>(c.size()));
    return pf;
  }
  double sum = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    pf[i] = std::exp(c[i].logit - mx);
    sum += pf[i];
  }
  for (auto& q : pf) q = static_cast<float>(q / sum);
  return pf;
}

inline size_t need(size_t min_keep) {
  return std::max<size_t>(min_keep, 1);
}

inline Cands ref_top_k(Cands c, int k, size_t min_keep) {
  if (k <= 0) return c;
  c = sorted_copy(c);
  const size_t kk = std::max(static_cast<size_t>(k), need(min_keep));
  if (kk < c.size()) c.resize(kk);
  return c;
}

inline Cands ref_top_p(Cands c, float p, size_t min_keep) {
  if (p >= 1.0f || c.size() <= 1) return c;
  c = sorted_copy(c);
  if (c[0].logit == -INFINITY) return c;
  const auto pr = ref_probs(c);
  double cum = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    cum += pr[i];
    if (cum >= p && i + 1 >= need(min_keep)) {
      c.resize(i + 1);
      break;
    }
  }
  return c;
}

inline Cands ref_min_p(Cands c, float p, size_t min_keep) {
  if (p <= 0.0f || c.size() <= 1) return c;
  float mx = -INFINITY;
  for (const auto& x : c) mx = std::max(mx, x.logit);
  const float thr = mx + std::log(p);
  Cands out;
  for (const auto& x : c)
    if (x.logit >= thr) out.push_back(x);
  if (out.size() < need(min_keep)) return ref_top_k(c, static_cast<int>(need(min_keep)), 0);
  return out;
}

inline Cands ref_typical(Cands c, float p, size_t min_keep) {
  if (p >= 1.0f || c.size() <= 1) return c;
  const std::vector<float> pf = ref_probs_float(c);
  double h = 0;
  for (float q : pf)
    if (q > 0) h -= static_cast<double>(q) * std::log(static_cast<double>(q));
  std::vector<size_t> idx(c.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  auto shift = [&](size_t i) {
    return pf[i] > 0 ? std::fabs(-std::log(static_cast<double>(pf[i])) - h) : INFINITY;
  };
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    if (shift(a) != shift(b)) return shift(a) < shift(b);
    return better(c[a], c[b]);
  });
  double cum = 0;
  Cands out;
  for (size_t i = 0; i < idx.size(); ++i) {
    out.push_back(c[idx[i]]);
    cum += pf[idx[i]];
    if (cum > p && i + 1 >= need(min_keep)) break;
  }
  return out;
}

inline Cands ref_top_n_sigma(Cands c, float n, size_t min_keep) {
  if (n <= 0 || c.size() <= 1) return c;
  std::vector<double> f;
  float mx = -INFINITY;
  for (const auto& x : c)
    if (std::isfinite(x.logit)) {
      f.push_back(x.logit);
      mx = std::max(mx, x.logit);
    }
  if (f.empty()) return c;
  double mean = 0;
  for (double v : f) mean += v;
  mean /= static_cast<double>(f.size());
  double var = 0;
  for (double v : f) var += (v - mean) * (v - mean);
  const double thr = mx - n * std::sqrt(var / static_cast<double>(f.size()));
  Cands out;
  for (const auto& x : c)
    if (std::isfinite(x.logit) && x.logit >= thr) out.push_back(x);
  if (out.size() < need(min_keep)) return ref_top_k(c, static_cast<int>(need(min_keep)), 0);
  return out;
}

// XTC when its random chance fires.
inline Cands ref_xtc_fired(Cands c, float threshold, size_t min_keep) {
  const std::vector<float> pf = ref_probs_float(c);
  Cands above, rest;
  for (size_t i = 0; i < c.size(); ++i) (pf[i] >= threshold ? above : rest).push_back(c[i]);
  if (above.size() < 2 || c.size() - (above.size() - 1) < need(min_keep)) return c;
  above = sorted_copy(above);
  rest.push_back(above.back());
  return rest;
}

// Penalties rebuilt from the whole history.
inline void ref_penalties(std::vector<float>& logits, const std::vector<int32_t>& history,
                          int last_n, float repeat, float freq, float presence) {
  if (last_n == 0) return;
  const size_t start =
      last_n < 0 || history.size() <= static_cast<size_t>(last_n) ? 0 : history.size() - last_n;
  std::map<int32_t, int32_t> counts;
  for (size_t i = start; i < history.size(); ++i) ++counts[history[i]];
  for (const auto& [t, n] : counts) {
    float& x = logits[static_cast<size_t>(t)];
    x = x <= 0.0f ? x * repeat : x / repeat;
    x = x - static_cast<float>(n) * freq - presence;
  }
}

// DRY by the definition: for every earlier occurrence of the last token, count back.
inline std::map<int32_t, int32_t> ref_dry_matches(const std::vector<int32_t>& history,
                                                  const std::function<bool(int32_t)>& breaker,
                                                  int allowed, int last_n) {
  std::map<int32_t, int32_t> best;
  const size_t start =
      last_n < 0 || history.size() <= static_cast<size_t>(last_n) ? 0 : history.size() - last_n;
  const std::vector<int32_t> w(history.begin() + static_cast<std::ptrdiff_t>(start), history.end());
  const auto n = static_cast<int64_t>(w.size());
  if (n < 2 || breaker(w[static_cast<size_t>(n - 1)])) return best;
  for (int64_t i = 0; i + 1 < n; ++i) {
    if (w[static_cast<size_t>(i)] != w[static_cast<size_t>(n - 1)]) continue;
    const int32_t next = w[static_cast<size_t>(i + 1)];
    if (breaker(next)) continue;
    int32_t len = 1;
    for (;;) {
      const int64_t j = i - len;
      if (j < 0 || breaker(w[static_cast<size_t>(j)])) break;
      if (w[static_cast<size_t>(n - 1 - len)] != w[static_cast<size_t>(j)]) break;
      ++len;
    }
    if (len >= allowed) best[next] = std::max(best[next], len);
  }
  return best;
}

inline void ref_dry(std::vector<float>& logits, const std::vector<int32_t>& history,
                    const std::function<bool(int32_t)>& breaker, float multiplier, float base,
                    int allowed, int last_n) {
  for (const auto& [t, len] : ref_dry_matches(history, breaker, allowed, last_n)) {
    const float pen =
        std::min(multiplier * std::pow(base, static_cast<float>(len - allowed)), FLT_MAX);
    logits[static_cast<size_t>(t)] -= pen;
  }
}

// Deterministic test logits (std::mt19937 output is specified; the conversion is ours).
inline std::vector<float> random_logits(size_t n, uint32_t seed, float scale = 4.0f) {
  std::mt19937 g(seed);
  std::vector<float> v(n);
  for (auto& x : v) {
    const double u = (static_cast<double>(g()) + 0.5) / 4294967296.0;
    const double w = (static_cast<double>(g()) + 0.5) / 4294967296.0;
    x = static_cast<float>(scale * std::sqrt(-2 * std::log(u)) * std::cos(6.283185307179586 * w));
  }
  return v;
}

}  // namespace hearth::test
