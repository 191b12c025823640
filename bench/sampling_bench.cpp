// Per-token sampling time on a 151,936-entry vocabulary (Qwen2/3): the default chain and the
// full chain (every stage on, penalties and DRY over the whole history) at history lengths 100
// and 10,000, plus logprobs. Prints best and median of repeated runs (the machine is shared).
//
//   sampling_bench [--tokens N] [--reps R]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "sampling/sampler.h"

using namespace hearth;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int32_t kVocab = 151936;

std::vector<std::vector<float>> make_rows(int n) {
  std::mt19937 g(1);
  std::vector<std::vector<float>> rows(static_cast<size_t>(n), std::vector<float>(kVocab));
  for (auto& r : rows)
    for (auto& x : r) {  // logits shaped like a model's: a heavy head over a flat body
      const double u = (g() + 0.5) / 4294967296.0;
      x = static_cast<float>(-3.0 * std::log(-std::log(u)));
    }
  return rows;
}

// History with the repeats of real text (so DRY has matches to extend).
std::vector<int32_t> make_history(size_t n) {
  std::mt19937 g(2);
  std::vector<int32_t> h;
  while (h.size() < n) {
    if (h.size() > 50 && g() % 4 == 0) {  // repeat an earlier stretch
      const size_t from = g() % (h.size() - 20), len = 5 + g() % 15;
      for (size_t i = 0; i < len && h.size() < n; ++i) h.push_back(h[from + i]);
    } else {
      h.push_back(static_cast<int32_t>(g() % 4000));  // a few thousand common tokens
    }
  }
  return h;
}

struct Figure {
  double best_us, median_us;
};

Figure measure(const SamplerParams& p, size_t history, const std::vector<std::vector<float>>& rows,
               int tokens, int reps) {
  VocabAccess v;
  v.n_vocab = kVocab;
  v.token_piece = [](int32_t t) { return t % 97 == 0 ? std::string("\n") : std::string("w"); };
  const auto hist = make_history(history);
  std::vector<double> per_token;
  for (int r = 0; r < reps; ++r) {
    Sampler s(p, v);
    s.set_history(hist);
    s.sample(rows[0]);  // warm the scratch buffers
    const auto t0 = Clock::now();
    for (int i = 0; i < tokens; ++i) {
      const auto res = s.sample(rows[static_cast<size_t>(i) % rows.size()]);
      s.accept(res.token);
    }
    per_token.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() /
                        tokens);
  }
  std::sort(per_token.begin(), per_token.end());
  return {per_token.front(), per_token[per_token.size() / 2]};
}

}  // namespace

int main(int argc, char** argv) {
  int tokens = 200, reps = 7;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--tokens")) tokens = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
  }
  const auto rows = make_rows(16);

  SamplerParams def;  // temperature + top-k/top-p/min-p, as llama-server
  def.seed = 1;
  SamplerParams full = def;  // every stage doing work
  full.repeat_penalty = 1.1f;
  full.repeat_last_n = -1;
  full.presence_penalty = 0.2f;
  full.frequency_penalty = 0.2f;
  full.dry_multiplier = 0.8f;
  full.dry_penalty_last_n = -1;
  full.top_n_sigma = 3.0f;
  full.top_k = 0;  // so top_n_sigma / typical / top_p see the whole vocabulary
  full.typical_p = 0.95f;
  full.xtc_probability = 0.5f;
  full.xtc_threshold = 0.1f;
  full.dynatemp_range = 0.3f;
  full.logit_bias = {{11, 2.0f}, {13, -INFINITY}};
  SamplerParams full_k = full;
  full_k.top_k = 40;
  SamplerParams greedy = def;
  greedy.temperature = 0.0f;
  SamplerParams def_probs = def;
  def_probs.n_probs = 5;

  std::printf("sampling_bench: vocabulary %d, %d tokens x %d runs, per token (best / median)\n",
              kVocab, tokens, reps);
  struct Case {
    const char* name;
    const SamplerParams* p;
  } cases[] = {{"default chain", &def},
               {"greedy", &greedy},
               {"default + n_probs 5", &def_probs},
               {"full chain, top_k 40", &full_k},
               {"full chain, top_k off", &full}};
  for (const auto& c : cases) {
    const Figure a = measure(*c.p, 100, rows, tokens, reps);
    const Figure b = measure(*c.p, 10000, rows, tokens, reps);
    std::printf(
        "  %-22s history 100: %7.1f / %7.1f us   history 10000: %7.1f / %7.1f us   "
        "ratio (best) %.3f\n",
        c.name, a.best_us, a.median_us, b.best_us, b.median_us, b.best_us / a.best_us);
  }
  return 0;
}
