// The incremental penalty and DRY state against a rebuild-every-token reference over 1,000-step
// random sequences with repeats, shrinks (cache trim) and divergence (speculative rollback):
// the rewritten logits must be bit-identical.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>

#include "sampling/dry_state.h"
#include "sampling/reference_samplers.h"
#include "sampling/sampler.h"

namespace hearth {
namespace {

constexpr int32_t kVocab = 64;

bool test_breaker(int32_t t) {
  return t % 11 == 0;
}

VocabAccess test_vocab() {
  VocabAccess v;
  v.n_vocab = kVocab;
  v.token_piece = [](int32_t t) {
    return test_breaker(t) ? std::string("a\nb") : "tok" + std::to_string(t);
  };
  return v;
}

// Text with many repeats: mostly copies of earlier stretches, sometimes fresh tokens.
class SequenceSource {
 public:
  explicit SequenceSource(uint32_t seed) : g_(seed) {}
  int32_t next(const std::vector<int32_t>& hist) {
    if (!hist.empty() && copying_ && copy_pos_ < hist.size() && roll() < 0.9) {
      return hist[copy_pos_++];
    }
    copying_ = roll() < 0.6 && !hist.empty();
    copy_pos_ = hist.empty() ? 0 : g_() % hist.size();
    return static_cast<int32_t>(g_() % (roll() < 0.5 ? 12 : kVocab));
  }
  double roll() { return static_cast<double>(g_()) / 4294967296.0; }
  uint32_t below(uint32_t n) { return n == 0 ? 0 : g_() % n; }

 private:
  std::mt19937 g_;
  bool copying_ = false;
  size_t copy_pos_ = 0;
};

std::vector<float> reference_rewrite(const std::vector<float>& logits, const SamplerParams& p,
                                     const std::vector<int32_t>& hist) {
  std::vector<float> out = logits;
  for (const auto& b : p.logit_bias) out[static_cast<size_t>(b.token)] += b.bias;
  test::ref_penalties(out, hist, p.repeat_last_n, p.repeat_penalty, p.frequency_penalty,
                      p.presence_penalty);
  if (p.dry_multiplier > 0 && p.dry_penalty_last_n != 0)
    test::ref_dry(out, hist, test_breaker, p.dry_multiplier, effective_dry_base(p),
                  p.dry_allowed_length, p.dry_penalty_last_n);
  return out;
}

void run_sequence(const SamplerParams& p, uint32_t seed) {
  SCOPED_TRACE("repeat_last_n " + std::to_string(p.repeat_last_n) + " dry_allowed_length " +
               std::to_string(p.dry_allowed_length) + " dry_penalty_last_n " +
               std::to_string(p.dry_penalty_last_n) + " seed " + std::to_string(seed));
  const VocabAccess vocab = test_vocab();
  Sampler inc(p, vocab);
  SequenceSource src(seed);
  std::vector<int32_t> hist;
  for (int i = 0; i < 20; ++i) hist.push_back(src.next(hist));
  inc.set_history(hist);  // the prompt
  const std::vector<float> logits = test::random_logits(kVocab, seed);
  std::vector<float> got(kVocab), rebuilt(kVocab);
  int rollbacks = 0;
  for (int step = 0; step < 1000; ++step) {
    const double r = src.roll();
    if (r < 0.03 && hist.size() > 2) {  // cache trim: shrink
      hist.resize(hist.size() - 1 - src.below(static_cast<uint32_t>(hist.size() / 2)));
      inc.set_history(hist);
      ++rollbacks;
    } else if (r < 0.06 && hist.size() > 2) {  // speculative rollback: diverge, then extend
      const size_t at = hist.size() - 1 - src.below(std::min<uint32_t>(8, hist.size() - 1));
      hist.resize(at + 1);
      hist[at] = static_cast<int32_t>(src.below(kVocab));
      hist.push_back(src.next(hist));
      inc.set_history(hist);
      ++rollbacks;
    } else if (r < 0.08) {  // the caller hands over an extension
      for (int k = 0; k < 3; ++k) hist.push_back(src.next(hist));
      inc.set_history(hist);
    } else {
      hist.push_back(src.next(hist));
      inc.accept(hist.back());
    }
    inc.apply_logit_rewrites(logits, got);
    Sampler fresh(p, vocab);
    fresh.set_history(hist);
    fresh.apply_logit_rewrites(logits, rebuilt);
    const std::vector<float> want = reference_rewrite(logits, p, hist);
    ASSERT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0)
        << "step " << step << ", history " << hist.size();
    ASSERT_EQ(std::memcmp(rebuilt.data(), want.data(), want.size() * sizeof(float)), 0)
        << "step " << step;
  }
  EXPECT_GT(rollbacks, 20);
  EXPECT_EQ(std::vector<int32_t>(inc.history().begin(), inc.history().end()), hist);
}

SamplerParams penalty_params() {
  SamplerParams p;
  p.repeat_penalty = 1.3f;
  p.frequency_penalty = 0.2f;
  p.presence_penalty = 0.4f;
  p.dry_multiplier = 0.8f;
  p.dry_base = 1.75f;
  p.logit_bias = {{3, 1.5f}, {5, -INFINITY}};
  return p;
}

TEST(IncrementalState, PenaltiesAndDryMatchRebuildEveryToken) {
  for (int32_t last_n : {64, -1, 7})
    for (int32_t allowed : {2, 1, 0, 3})
      for (int32_t dry_last_n : {-1, 50}) {
        SamplerParams p = penalty_params();
        p.repeat_last_n = last_n;
        p.dry_allowed_length = allowed;
        p.dry_penalty_last_n = dry_last_n;
        run_sequence(p, static_cast<uint32_t>(100 + last_n * 7 + allowed * 3 + dry_last_n));
      }
}

TEST(IncrementalState, DryMatchesEqualTheDefinition) {
  SequenceSource src(9);
  for (int32_t allowed : {0, 1, 2, 4})
    for (int32_t last_n : {-1, 30}) {
      DryState d(allowed, last_n);
      std::vector<int32_t> hist;
      size_t nonempty = 0;
      for (int step = 0; step < 1000; ++step) {
        hist.push_back(src.next(hist));
        d.push(hist.back(), test_breaker(hist.back()));
        const auto want = test::ref_dry_matches(hist, test_breaker, allowed, last_n);
        const auto got = d.matches();
        ASSERT_EQ(got.size(), want.size()) << "step " << step;
        size_t i = 0;
        for (const auto& [t, len] : want) {
          EXPECT_EQ(got[i].token, t) << "step " << step;
          EXPECT_EQ(got[i].length, len) << "step " << step;
          ++i;
        }
        nonempty += !want.empty();
      }
      EXPECT_GT(nonempty, 50u);  // the sequence does exercise repeats
    }
}

TEST(IncrementalState, DryExampleByHand) {
  // "a b c x a b" with allowed_length 2: "a b" repeats; the token after the earlier "a b" is
  // c, with a repeat of length 2. A breaker (11) stops a match.
  DryState d(2, -1);
  for (int32_t t : {1, 2, 3, 4, 1, 2}) d.push(t, test_breaker(t));
  auto m = d.matches();
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].token, 3);
  EXPECT_EQ(m[0].length, 2);
  d.push(11, true);  // the last token is a breaker: nothing
  EXPECT_TRUE(d.matches().empty());
}

}  // namespace
}  // namespace hearth
