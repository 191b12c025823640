#include "sampling/stages.h"

#include <algorithm>
#include <cmath>

#include "ops/elementwise.h"

namespace hearth {
namespace {

size_t keep_at_least(size_t min_keep) {
  return std::max<size_t>(min_keep, 1);
}

// Ensures items[0, m) are the m best in the total order, sorted. With m == size the whole
// list is sorted.
void sort_prefix(Candidates& c, size_t m) {
  auto& it = c.items();
  if (c.sorted()) return;
  m = std::min(m, it.size());
  std::partial_sort(it.begin(), it.begin() + static_cast<std::ptrdiff_t>(m), it.end(), better);
  if (m == it.size()) c.set_sorted(true);
}

// Keeps the m best (sorted).
void truncate_best(Candidates& c, size_t m) {
  auto& it = c.items();
  if (m >= it.size()) return;
  sort_prefix(c, m);
  it.resize(m);
  c.set_sorted(true);
}

// Streaming selection of the k best of a dense view: one compare per token for all but the
// few that enter the heap.
void select_dense_top_k(Candidates& c, size_t k) {
  const std::span<const float> v = c.dense_logits();
  auto& heap = c.start_sparse();
  heap.reserve(k);
  for (size_t i = 0; i < k; ++i) heap.push_back({static_cast<int32_t>(i), logit_key(v[i])});
  std::make_heap(heap.begin(), heap.end(), better);  // front: the worst kept
  for (size_t i = k; i < v.size(); ++i) {
    // A later token has a higher id, so it must be strictly better to enter.
    if (v[i] > heap.front().logit) {
      std::pop_heap(heap.begin(), heap.end(), better);
      heap.back() = {static_cast<int32_t>(i), v[i]};
      std::push_heap(heap.begin(), heap.end(), better);
    }
  }
  std::sort_heap(heap.begin(), heap.end(), better);
  c.set_sorted(true);
}

float max_logit(std::span<const Candidate> items) {
  float mx = -INFINITY;
  for (const auto& x : items) mx = std::max(mx, x.logit);
  return mx;
}

// sum(exp(logit - mx)) in a fixed order, in double.
double exp_sum(std::span<const Candidate> items, float mx) {
  double s = 0.0;
  for (const auto& x : items) s += static_cast<double>(std::exp(x.logit - mx));
  return s;
}

// Keeps the items for which keep(i) is true, in order.
template <typename Keep>
void filter(std::vector<Candidate>& items, Keep keep) {
  size_t w = 0;
  for (size_t i = 0; i < items.size(); ++i)
    if (keep(i)) items[w++] = items[i];
  items.resize(w);
}

void keep_only_best(Candidates& c) {
  const int32_t best = pick_best(c);
  auto& it = c.items();
  float logit = 0.0f;
  for (const auto& x : it)
    if (x.token == best) logit = x.logit;
  it.assign(1, Candidate{best, logit});
  c.set_sorted(true);
}

}  // namespace

void softmax(std::span<const Candidate> items, std::vector<float>& out) {
  out.resize(items.size());
  if (items.empty()) return;
  const float mx = max_logit(items);
  if (mx == -INFINITY) {
    std::fill(out.begin(), out.end(), 1.0f / static_cast<float>(items.size()));
    return;
  }
  double sum = 0.0;
  for (size_t i = 0; i < items.size(); ++i) {
    out[i] = std::exp(items[i].logit - mx);
    sum += static_cast<double>(out[i]);
  }
  for (auto& p : out) p = static_cast<float>(static_cast<double>(p) / sum);
}

void apply_top_k(Candidates& c, int32_t k, size_t min_keep) {
  if (k <= 0) return;
  const size_t kk = std::max(static_cast<size_t>(k), keep_at_least(min_keep));
  if (kk >= c.size()) return;
  if (c.dense()) {
    select_dense_top_k(c, kk);
  } else {
    truncate_best(c, kk);
  }
}

void apply_top_p(Candidates& c, float p, size_t min_keep) {
  if (p >= 1.0f || c.size() <= 1) return;
  auto& it = c.items();
  const float mx = max_logit(it);
  if (mx == -INFINITY) return;  // uniform over equals: nothing to rank
  const double sum = exp_sum(it, mx);
  // Sort only as far as needed: a prefix of growing length.
  const size_t n = it.size();
  const size_t need = keep_at_least(min_keep);
  double cum = 0.0;
  size_t done = 0;
  for (size_t m = std::min<size_t>(n, 64);; m = std::min(n, m * 8)) {
    sort_prefix(c, m);
    for (; done < m; ++done) {
      cum += static_cast<double>(std::exp(it[done].logit - mx)) / sum;
      if (cum >= static_cast<double>(p) && done + 1 >= need) {
        it.resize(done + 1);
        c.set_sorted(true);
        return;
      }
    }
    if (m == n) return;  // rounding left the total just short of p: keep everything
  }
}

void apply_min_p(Candidates& c, float p, size_t min_keep) {
  if (p <= 0.0f || c.size() <= 1) return;
  const size_t need = keep_at_least(min_keep);
  if (c.dense()) {
    const std::span<const float> v = c.dense_logits();
    float mx = -INFINITY;
    for (float x : v) mx = x > mx ? x : mx;
    const float thr = mx + std::log(p);
    size_t count = 0;
    for (float x : v) count += x >= thr;
    if (count < need) return truncate_best(c, need);
    auto& it = c.start_sparse();
    it.reserve(count);
    for (size_t i = 0; i < v.size(); ++i)
      if (v[i] >= thr) it.push_back({static_cast<int32_t>(i), v[i]});
    return;
  }
  auto& it = c.items();
  const float thr = max_logit(it) + std::log(p);
  size_t count = 0;
  for (const auto& x : it) count += x.logit >= thr;
  if (count < need) return truncate_best(c, need);
  filter(it, [&](size_t i) { return it[i].logit >= thr; });
}

void apply_typical(Candidates& c, float p, size_t min_keep) {
  if (p >= 1.0f || c.size() <= 1) return;
  auto& it = c.items();
  auto& probs = c.probs();
  softmax(it, probs);
  double entropy = 0.0;
  for (float q : probs)
    if (q > 0.0f) entropy -= static_cast<double>(q) * std::log(static_cast<double>(q));
  // Order by |surprise - entropy| (ties by the total order); zero-probability tokens last.
  auto& shifts = c.shifts();
  shifts.resize(it.size());
  for (size_t i = 0; i < it.size(); ++i)
    shifts[i] = probs[i] > 0.0f ? std::fabs(-std::log(static_cast<double>(probs[i])) - entropy)
                                : static_cast<double>(INFINITY);
  auto& order = c.order();
  order.resize(it.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    if (shifts[a] != shifts[b]) return shifts[a] < shifts[b];
    return better(it[a], it[b]);
  });
  const size_t need = keep_at_least(min_keep);
  double cum = 0.0;
  size_t last = order.size();
  for (size_t i = 0; i < order.size(); ++i) {
    cum += static_cast<double>(probs[order[i]]);
    if (cum > static_cast<double>(p) && i + 1 >= need) {
      last = i + 1;
      break;
    }
  }
  auto& spare = c.spare();
  spare.resize(last);
  for (size_t i = 0; i < last; ++i) spare[i] = it[order[i]];
  it.swap(spare);
  c.set_sorted(false);
}

namespace {

// max, mean and population standard deviation over the finite values of `logit(i)`, i < n.
template <typename Logit>
bool finite_stats(size_t n, Logit logit, float& mx, double& sd) {
  mx = -INFINITY;
  double sum = 0.0;
  size_t count = 0;
  for (size_t i = 0; i < n; ++i) {
    const float x = logit(i);
    if (x > -INFINITY && x < INFINITY) {  // finite (NaN fails both)
      mx = std::max(mx, x);
      sum += x;
      ++count;
    }
  }
  if (count == 0) return false;
  const double mean = sum / static_cast<double>(count);
  double var = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const float x = logit(i);
    if (x > -INFINITY && x < INFINITY) var += (x - mean) * (x - mean);
  }
  sd = std::sqrt(var / static_cast<double>(count));
  return true;
}

}  // namespace

void apply_top_n_sigma(Candidates& c, float n, size_t min_keep) {
  if (n <= 0.0f || c.size() <= 1) return;
  const size_t need = keep_at_least(min_keep);
  float mx = -INFINITY;
  double sd = 0.0;
  auto in = [](float x, double thr) { return x < INFINITY && x >= thr; };  // NaN fails too
  if (c.dense()) {  // straight over the view: no copy of the vocabulary
    const std::span<const float> v = c.dense_logits();
    if (!finite_stats(
            v.size(), [&](size_t i) { return v[i]; }, mx, sd))
      return;
    const double thr = static_cast<double>(mx) - static_cast<double>(n) * sd;
    size_t kept = 0;
    for (float x : v) kept += in(x, thr);
    if (kept < need) return truncate_best(c, need);
    auto& it = c.start_sparse();
    it.reserve(kept);
    for (size_t i = 0; i < v.size(); ++i)
      if (in(v[i], thr)) it.push_back({static_cast<int32_t>(i), v[i]});
    return;
  }
  auto& it = c.items();
  if (!finite_stats(
          it.size(), [&](size_t i) { return it[i].logit; }, mx, sd))
    return;
  const double thr = static_cast<double>(mx) - static_cast<double>(n) * sd;
  size_t kept = 0;
  for (const auto& x : it) kept += in(x.logit, thr);
  if (kept < need) return truncate_best(c, need);
  filter(it, [&](size_t i) { return in(it[i].logit, thr); });
}

void apply_xtc(Candidates& c, float probability, float threshold, size_t min_keep,
               SamplerRng& rng) {
  if (probability <= 0.0f || threshold > 0.5f || c.size() < 2) return;
  if (rng.uniform() > static_cast<double>(probability)) return;
  auto& it = c.items();
  auto& probs = c.probs();
  softmax(it, probs);
  size_t above = 0;
  size_t weakest = 0;  // the least likely token above the threshold stays
  for (size_t i = 0; i < it.size(); ++i) {
    if (probs[i] < threshold) continue;
    if (above == 0 || better(it[weakest], it[i])) weakest = i;
    ++above;
  }
  if (above < 2 || it.size() - (above - 1) < keep_at_least(min_keep)) return;
  filter(it, [&](size_t i) { return probs[i] < threshold || i == weakest; });
}

void apply_temperature(Candidates& c, float t, float dynatemp_range, float dynatemp_exponent) {
  if (dynatemp_range > 0.0f) {
    if (c.size() <= 1) return;
    auto& it = c.items();
    auto& probs = c.probs();
    softmax(it, probs);
    double entropy = 0.0;
    for (float q : probs)
      if (q > 0.0f) entropy -= static_cast<double>(q) * std::log(static_cast<double>(q));
    const double max_entropy = std::log(static_cast<double>(it.size()));
    const double norm = entropy / max_entropy;
    const double lo = std::max(0.0f, t - dynatemp_range), hi = t + dynatemp_range;
    t = static_cast<float>(lo + (hi - lo) * std::pow(norm, dynatemp_exponent));
  }
  if (!(t > 0.0f)) return keep_only_best(c);
  if (t == 1.0f) return;
  auto& it = c.items();
  for (auto& x : it) x.logit /= t;
}

int32_t pick_best(Candidates& c) {
  if (c.dense()) {  // the first best logit, NaN ranked lowest (logit_key), in SIMD passes
    const std::span<const float> v = c.dense_logits();
    return static_cast<int32_t>(ops::first_max_index(v.data(), static_cast<int64_t>(v.size())));
  }
  const auto& it = c.items();
  if (c.sorted()) return it[0].token;
  size_t best = 0;
  for (size_t i = 1; i < it.size(); ++i)
    if (better(it[i], it[best])) best = i;
  return it[best].token;
}

size_t draw_index(Candidates& c, double u) {
  auto& it = c.items();
  auto& e = c.probs();
  e.resize(it.size());
  const float mx = max_logit(it);
  if (mx == -INFINITY)  // nothing to prefer: uniform
    return std::min(it.size() - 1, static_cast<size_t>(u * static_cast<double>(it.size())));
  double sum = 0.0;
  for (size_t i = 0; i < it.size(); ++i) {
    e[i] = std::exp(it[i].logit - mx);
    sum += static_cast<double>(e[i]);
  }
  const double r = u * sum;
  double acc = 0.0;
  size_t last_nonzero = 0;
  for (size_t i = 0; i < it.size(); ++i) {
    if (e[i] <= 0.0f) continue;
    acc += static_cast<double>(e[i]);
    last_nonzero = i;
    if (r < acc) return i;
  }
  return last_nonzero;  // rounding at the very top of the range
}

namespace {

// The chosen token and the surprise (-log2 p) of it under the distribution it was drawn from.
int32_t draw_with_surprise(Candidates& c, SamplerRng& rng, double& surprise) {
  const size_t idx = draw_index(c, rng.uniform());
  auto& probs = c.probs();
  softmax(c.items(), probs);
  surprise = -std::log2(static_cast<double>(probs[idx]));
  return c.items()[idx].token;
}

}  // namespace

int32_t sample_mirostat_v1(Candidates& c, float tau, float eta, int32_t n_vocab, float& mu,
                           SamplerRng& rng) {
  auto& it = c.items();
  const size_t m = std::min<size_t>(100, it.size());
  sort_prefix(c, m);
  auto& probs = c.probs();
  const float mx = max_logit(it);
  const double sum = mx == -INFINITY ? 0.0 : exp_sum(it, mx);
  // Estimate the Zipf exponent from the m best probabilities.
  double sum_tb = 0.0, sum_tt = 0.0;
  probs.resize(m);
  for (size_t i = 0; i < m; ++i) probs[i] = static_cast<float>(std::exp(it[i].logit - mx) / sum);
  for (size_t i = 0; i + 1 < m; ++i) {
    const double t = std::log(static_cast<double>(i + 2) / static_cast<double>(i + 1));
    const double b = std::log(static_cast<double>(probs[i]) / static_cast<double>(probs[i + 1]));
    sum_tb += t * b;
    sum_tt += t * t;
  }
  const double s_hat = sum_tb / sum_tt;
  const double eps = s_hat - 1.0;
  double k = std::pow(eps * std::pow(2.0, static_cast<double>(mu)) /
                          (1.0 - std::pow(static_cast<double>(n_vocab), -eps)),
                      1.0 / s_hat);
  if (!(k >= 1.0)) k = 1.0;  // also catches NaN from degenerate distributions
  if (k > static_cast<double>(it.size())) k = static_cast<double>(it.size());
  const auto kk = static_cast<size_t>(k);
  sort_prefix(c, kk);  // (all of it when kk == size: the draw walks the items in order)
  it.resize(kk);
  c.set_sorted(true);
  double surprise = 0.0;
  const int32_t tok = draw_with_surprise(c, rng, surprise);
  mu -= eta * static_cast<float>(surprise - static_cast<double>(tau));
  return tok;
}

int32_t sample_mirostat_v2(Candidates& c, float tau, float eta, float& mu, SamplerRng& rng) {
  auto& it = c.items();
  auto& probs = c.probs();
  softmax(it, probs);
  size_t kept = 0;
  for (size_t i = 0; i < it.size(); ++i)
    kept += -std::log2(static_cast<double>(probs[i])) <= static_cast<double>(mu);
  if (kept == 0) {
    truncate_best(c, 1);
  } else {
    filter(it, [&](size_t i) {
      return -std::log2(static_cast<double>(probs[i])) <= static_cast<double>(mu);
    });
  }
  double surprise = 0.0;
  const int32_t tok = draw_with_surprise(c, rng, surprise);
  mu -= eta * static_cast<float>(surprise - static_cast<double>(tau));
  return tok;
}

}  // namespace hearth
