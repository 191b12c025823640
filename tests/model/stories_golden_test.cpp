// stories260K (a real trained tiny llama) against llama.cpp's greedy run and a float64 reference.
#include <gtest/gtest.h>

#include "golden_util.h"
#include "model/reference_forward.h"
#include "sampling/basic_sampler.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace hearth {
namespace {

using test::ids_of;
using test::load_json;
using test::max_abs_diff;

class StoriesGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(StoriesGolden, TokensLogitsAndGreedyMatch) {
  HEARTH_SHARED_OR_SKIP(model_path, "models/stories260K.gguf");
  HEARTH_SHARED_OR_SKIP(golden_path, "golden/stories260K/" + GetParam() + ".json");
  const nlohmann::json g = load_json(golden_path);
  auto model = Model::load(model_path);
  Tokenizer tok = Tokenizer::from_gguf(model->file());

  const std::vector<int32_t> prompt = ids_of(g["prompt_ids"]);
  EXPECT_EQ(tok.encode(g["prompt"].get<std::string>(), true, true), prompt)
      << "tokenization differs";

  ReferenceForward fwd(*model, 512);
  std::vector<float> logits = fwd.eval(prompt);
  const auto& last = g["reference_logits"]["last_prompt_position"];
  ASSERT_EQ(ids_of(last["input_ids"]), prompt);
  auto [d0, i0] = max_abs_diff(logits, last["logits"]);
  EXPECT_LT(d0, 1e-3) << "last prompt position, token " << i0;

  // Teacher-forced greedy: at every step our argmax must be llama.cpp's token, except where the
  // reference itself has a near-tie below our precision.
  const auto& steps = g["generation"]["steps"];
  const std::vector<int32_t> gen = ids_of(g["generation"]["ids"]);
  ASSERT_EQ(gen.size(), steps.size());
  for (size_t s = 0; s < gen.size(); ++s) {
    const double margin = steps[s]["ref_top1_top2_logit_margin"].get<double>();
    if (margin > 1e-4) {
      EXPECT_EQ(argmax(logits), gen[s]) << "step " << s << " (margin " << margin << ")";
    }
    if (s == 8) {
      const auto& after8 = g["reference_logits"]["after_8_generated"];
      auto [d8, i8] = max_abs_diff(logits, after8["logits"]);
      EXPECT_LT(d8, 1e-3) << "after 8 generated tokens, token " << i8;
    }
    const int32_t one[1] = {gen[s]};
    if (s + 1 < gen.size()) logits = fwd.eval(one);
  }
}

INSTANTIATE_TEST_SUITE_P(AllPrompts, StoriesGolden,
                         ::testing::Values("bos_only", "blank_line_tab", "cjk_emoji",
                                           "curly_quotes", "digits_symbols", "latin_accents",
                                           "lily_and_tom", "long_story", "newline",
                                           "once_upon_a_time", "punctuation", "spaces", "the_end"));

// Batch shape must not change the math: the whole prompt at once, token by token, and in
// uneven chunks give the same logits (the cache path's exactness baseline).
TEST(StoriesForward, ChunkedPrefillMatchesOneShot) {
  HEARTH_SHARED_OR_SKIP(model_path, "models/stories260K.gguf");
  auto model = Model::load(model_path);
  std::vector<int32_t> ids = {1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421};
  ReferenceForward a(*model, 64), b(*model, 64), c(*model, 64);
  std::vector<float> all = a.eval(ids, /*all_logits=*/true);
  const size_t V = static_cast<size_t>(model->hparams().n_vocab);
  ASSERT_EQ(all.size(), ids.size() * V);
  std::vector<float> last;
  for (size_t i = 0; i < ids.size(); ++i) {
    last = b.eval(std::span(&ids[i], 1));
    for (size_t k = 0; k < V; ++k) ASSERT_NEAR(last[k], all[i * V + k], 1e-4) << "token " << i;
  }
  c.eval(std::span(ids.data(), 5));
  std::vector<float> rest = c.eval(std::span(ids.data() + 5, ids.size() - 5));
  for (size_t k = 0; k < V; ++k) EXPECT_NEAR(rest[k], last[k], 1e-4);
}

TEST(StoriesForward, TruncateRecomputesIdentically) {
  HEARTH_SHARED_OR_SKIP(model_path, "models/stories260K.gguf");
  auto model = Model::load(model_path);
  std::vector<int32_t> ids = {1, 403, 407, 261, 378};
  ReferenceForward f(*model, 16);
  std::vector<float> first = f.eval(ids);
  f.truncate(2);
  std::vector<float> again = f.eval(std::span(ids.data() + 2, 3));
  EXPECT_EQ(first, again);
  EXPECT_EQ(f.n_past(), 5);
}

TEST(StoriesForward, RejectsBadTokensAndOverflow) {
  HEARTH_SHARED_OR_SKIP(model_path, "models/stories260K.gguf");
  auto model = Model::load(model_path);
  ReferenceForward f(*model, 4);
  std::vector<int32_t> bad = {1, 512};
  EXPECT_THROW(f.eval(bad), Error);
  std::vector<int32_t> neg = {-1};
  EXPECT_THROW(f.eval(neg), Error);
  std::vector<int32_t> five = {1, 2, 3, 4, 5};
  EXPECT_THROW(f.eval(five), Error);
  EXPECT_EQ(f.n_past(), 0);
}

}  // namespace
}  // namespace hearth
