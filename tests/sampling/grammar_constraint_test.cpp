// The grammar constraint on a sampler: the sampled token is kept when the grammar allows it,
// else the mask decides; logprobs stay the model's; a vocabulary that cannot continue the
// grammar is an error, never a token the grammar rejects.
#include "sampling/grammar_constraint.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>

#include "util/error.h"

namespace hearth {
namespace {

// Pieces "a" "b" "c" "ab" "x", and token 5 the end of generation.
std::shared_ptr<const TokenTrie> small_trie() {
  return std::make_shared<const TokenTrie>(std::vector<std::string>{"a", "b", "c", "ab", "x", ""},
                                           std::vector<int32_t>{5});
}

SamplerParams greedy(int32_t n_probs = 0) {
  SamplerParams p;
  p.temperature = 0.0f;
  p.n_probs = n_probs;
  return p;
}

std::shared_ptr<const Grammar> grammar(const char* text) {
  return std::make_shared<const Grammar>(Grammar::parse(text));
}

TEST(GrammarConstraint, TheBestAllowedTokenWinsAndTheEndComesWhenTheMatchIsWhole) {
  Sampler s(greedy(), VocabAccess{6, nullptr, nullptr});
  GrammarConstraint g(grammar("root ::= \"a\" \"b\"+"), small_trie());
  // "x" is the model's favourite, then "c", then "ab": the grammar allows "a" or "ab".
  const std::vector<float> logits = {1.0f, 0.5f, 3.0f, 2.0f, 4.0f, 0.0f};
  SampleResult r = g.sample(s, logits);
  EXPECT_EQ(r.token, 3);  // "ab"
  g.accept(r.token);
  EXPECT_TRUE(g.complete());
  // After "ab": "b" or the end; the end is preferred here.
  const std::vector<float> end_first = {0.0f, 1.0f, 0.0f, 0.0f, 9.0f, 2.0f};
  r = g.sample(s, end_first);
  EXPECT_EQ(r.token, 5);
  EXPECT_EQ(g.masked_steps(), 2);
}

TEST(GrammarConstraint, AnAllowedFirstChoiceNeedsNoMask) {
  Sampler s(greedy(), VocabAccess{6, nullptr, nullptr});
  GrammarConstraint g(grammar("root ::= [abc]+"), small_trie());
  const std::vector<float> logits = {0.0f, 5.0f, 1.0f, 0.0f, 0.0f, 0.0f};
  EXPECT_EQ(g.sample(s, logits).token, 1);
  EXPECT_EQ(g.masked_steps(), 0);
}

TEST(GrammarConstraint, LogprobsStayTheModels) {
  Sampler s(greedy(2), VocabAccess{6, nullptr, nullptr});
  GrammarConstraint g(grammar("root ::= \"c\""), small_trie());
  const std::vector<float> logits = {3.0f, 0.0f, 1.0f, 0.0f, 0.0f, 0.0f};
  const SampleResult r = g.sample(s, logits);
  ASSERT_EQ(r.token, 2);
  float lse = 0.0f;
  for (float l : logits) lse += std::exp(l);
  EXPECT_NEAR(r.logprob, 1.0f - std::log(lse), 1e-5f);
  ASSERT_EQ(r.top_logprobs.size(), 2u);
  EXPECT_EQ(r.top_logprobs[0].token, 0);  // the model's best, though the grammar refused it
}

TEST(GrammarConstraint, AVocabularyThatCannotContinueIsAnError) {
  Sampler s(greedy(), VocabAccess{6, nullptr, nullptr});
  GrammarConstraint g(grammar("root ::= \"a\" \"z\""), small_trie());
  const std::vector<float> logits = {1.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  g.accept(g.sample(s, logits).token);
  try {
    g.sample(s, logits);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("grammar cannot continue"), std::string::npos) << e.what();
  }
  EXPECT_THROW(g.accept(2), Error);  // a token the grammar rejects is never recorded silently
}

// Refusals before generation: what cannot start is known from the grammar and the vocabulary.
TEST(GrammarConstraint, StartProblemsAreFoundBeforeGenerating) {
  EXPECT_EQ(GrammarConstraint::start_problem(grammar("root ::= \"a\" \"b\"+"), small_trie()), "");
  // Nothing in the vocabulary starts with 'q'.
  EXPECT_NE(GrammarConstraint::start_problem(grammar("root ::= \"q\""), small_trie()), "");
  // The empty text matches: the end of generation is allowed at once.
  EXPECT_EQ(GrammarConstraint::start_problem(grammar("root ::= \"q\"?"), small_trie()), "");
  // 2,000 alternatives alive at the first character: past the matcher's stack limit.
  std::string flat = "root ::= ";
  for (int i = 0; i < 2000; ++i) flat += fmt::format("{}\"a{}\"", i ? " | " : "", i);
  const std::string why = GrammarConstraint::start_problem(grammar(flat.c_str()), small_trie());
  EXPECT_NE(why.find("grammar"), std::string::npos) << why;
}

}  // namespace
}  // namespace hearth
