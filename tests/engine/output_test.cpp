// The output stage alone (engine/output.h), without a model: a vocabulary-only tokenizer and
// hand-made logits rows, each with one clear winner for the greedy sampler.
#include "engine/output.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "common/shared_data.h"
#include "gguf/reader.h"
#include "util/error.h"

namespace hearth {
namespace {

const Tokenizer& qwen3() {
  static const std::unique_ptr<Tokenizer> tok = [] {
    const gguf::File file = gguf::File::open(test::shared_path("tokenizers/vocab-qwen3.gguf"));
    return std::make_unique<Tokenizer>(Tokenizer::from_gguf(file));
  }();
  return *tok;
}

#define QWEN3_OR_SKIP(var)                                          \
  HEARTH_SHARED_OR_SKIP(var##_path, "tokenizers/vocab-qwen3.gguf"); \
  const Tokenizer& var = qwen3()

// Drives one SequenceOutput with greedy sampling over rows that pick the given tokens.
struct Driver {
  const Tokenizer& tok;
  VocabAccess vocab;
  GenerationRequest req;
  std::unique_ptr<SequenceOutput> out;
  std::vector<int32_t> tokens{0};  // a one-token prompt

  explicit Driver(const Tokenizer& t, std::vector<std::string> stop = {}, int32_t n_probs = 0)
      : tok(t),
        vocab{static_cast<int32_t>(t.n_vocab()),
              [&t](int32_t id) { return t.token_to_piece(id, true); },
              [&t](std::string_view s) { return t.encode(s, false, false); }} {
    SamplerParams p;
    p.temperature = 0.0f;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.n_probs = n_probs;
    req.sampling = p;
    req.stop = std::move(stop);
    out = std::make_unique<SequenceOutput>(req, tok, vocab);
  }

  std::vector<float> row(int32_t id) const {
    std::vector<float> l(tok.n_vocab(), 0.0f);
    l[static_cast<size_t>(id)] = 10.0f;
    return l;
  }

  TokenOutput next(int32_t id) {
    const std::vector<float> l = row(id);
    TokenOutput t = out->next(l, tokens);
    tokens.push_back(t.event.token);
    return t;
  }
};

int32_t single_token(const Tokenizer& tok, const std::string& text, bool special = false) {
  const std::vector<int32_t> ids = tok.encode(text, false, special);
  EXPECT_EQ(ids.size(), 1u) << text;
  return ids.empty() ? -1 : ids[0];
}

TEST(SequenceOutput, StopStringAcrossTokensIsHeldBackAndNotEmitted) {
  QWEN3_OR_SKIP(tok);
  Driver d(tok, {"lo wo"});
  const TokenOutput a = d.next(single_token(tok, "Hello"));
  EXPECT_EQ(a.event.kind, EngineEvent::Kind::Token);
  EXPECT_EQ(a.event.text, "Hel");  // "lo" may start the stop string
  EXPECT_EQ(a.anchor_text, "Hello");
  EXPECT_FALSE(a.stop);
  const TokenOutput b = d.next(single_token(tok, " world"));
  EXPECT_EQ(b.event.text, "");
  EXPECT_EQ(b.anchor_text, " world");
  EXPECT_TRUE(b.stop);
  d.out->flush();
  const EngineEvent f = d.out->finished(FinishReason::Stop, "", {});
  EXPECT_EQ(f.kind, EngineEvent::Kind::Finished);
  EXPECT_EQ(f.text, "");  // the stop text is never emitted
}

TEST(SequenceOutput, PossibleStopStartGoesWithFinished) {
  QWEN3_OR_SKIP(tok);
  Driver d(tok, {"lo!"});
  EXPECT_EQ(d.next(single_token(tok, "Hello")).event.text, "Hel");
  EXPECT_EQ(d.out->flush(), "");
  const EngineEvent f = d.out->finished(FinishReason::Length, "", {});
  EXPECT_EQ(f.text, "lo");
  EXPECT_EQ(f.reason, FinishReason::Length);
}

TEST(SequenceOutput, IncompleteUtf8IsHeldBackToFinished) {
  QWEN3_OR_SKIP(tok);
  Driver d(tok);
  const int32_t lead = single_token(tok, "\xC3");  // the first byte of "é"
  const TokenOutput a = d.next(lead);
  EXPECT_EQ(a.event.token, lead);  // a Token event always carries its id...
  EXPECT_EQ(a.event.text, "");     // ...but no partial character
  EXPECT_EQ(a.anchor_text, "");
  EXPECT_FALSE(a.stop);
  EXPECT_EQ(d.out->flush(), "\xEF\xBF\xBD");  // U+FFFD, the text anchor's last piece
  EXPECT_EQ(d.out->flush(), "\xEF\xBF\xBD");  // the same when asked again
  const EngineEvent f = d.out->finished(FinishReason::Length, "", {});
  EXPECT_EQ(f.text, "\xEF\xBF\xBD");
}

TEST(SequenceOutput, CompletedCharacterComesWithTheTokenThatEndsIt) {
  QWEN3_OR_SKIP(tok);
  Driver d(tok);
  EXPECT_EQ(d.next(single_token(tok, "\xC3")).event.text, "");
  const TokenOutput b = d.next(single_token(tok, "\xA9"));
  EXPECT_EQ(b.event.text, "\xC3\xA9");
  EXPECT_EQ(b.anchor_text, "\xC3\xA9");
  EXPECT_EQ(d.out->finished(FinishReason::Length, "", {}).text, "");
}

TEST(SequenceOutput, CancelledDropsHeldBackText) {
  QWEN3_OR_SKIP(tok);
  Driver d(tok, {"lo!"});
  EXPECT_EQ(d.next(single_token(tok, "Hello")).event.text, "Hel");
  const EngineEvent f = d.out->finished(FinishReason::Cancelled, "", {});
  EXPECT_EQ(f.text, "");
  EXPECT_EQ(f.reason, FinishReason::Cancelled);
}

TEST(SequenceOutput, EndOfGenerationIsNotTextButIsAnchored) {
  QWEN3_OR_SKIP(tok);
  const int32_t im_end = single_token(tok, "<|im_end|>", true);
  ASSERT_TRUE(tok.is_eog(im_end));
  Driver d(tok);
  EXPECT_EQ(d.next(single_token(tok, "Hi")).event.text, "Hi");
  const TokenOutput e = d.next(im_end);
  EXPECT_EQ(e.event.token, im_end);
  EXPECT_EQ(e.event.text, "");
  EXPECT_EQ(e.anchor_text, "<|im_end|>");  // as the template writes it, for the next turn
  EXPECT_TRUE(e.stop);
  EXPECT_EQ(d.out->generated(), 2);
}

TEST(SequenceOutput, EndOfGenerationIgnoredWhenAsked) {
  QWEN3_OR_SKIP(tok);
  const int32_t im_end = single_token(tok, "<|im_end|>", true);
  Driver d(tok);
  d.req.stop_at_eog = false;
  d.out = std::make_unique<SequenceOutput>(d.req, tok, d.vocab);
  const TokenOutput e = d.next(im_end);
  EXPECT_FALSE(e.stop);
  EXPECT_EQ(e.anchor_text, e.event.text);
}

TEST(SequenceOutput, LogprobsCarriedWhenAsked) {
  QWEN3_OR_SKIP(tok);
  Driver d(tok, {}, 2);
  std::vector<float> l(tok.n_vocab(), 0.0f);
  l[7] = 3.0f;
  l[5] = 2.0f;
  const TokenOutput t = d.out->next(l, d.tokens);
  double sum = 0;
  for (float x : l) sum += std::exp(static_cast<double>(x));
  const float lse = static_cast<float>(std::log(sum));
  EXPECT_EQ(t.event.token, 7);
  EXPECT_NEAR(t.event.logprob, 3.0f - lse, 1e-4);
  ASSERT_EQ(t.event.top_logprobs.size(), 2u);
  EXPECT_EQ(t.event.top_logprobs[0].token, 7);
  EXPECT_EQ(t.event.top_logprobs[1].token, 5);
  EXPECT_NEAR(t.event.top_logprobs[1].logprob, 2.0f - lse, 1e-4);
}

TEST(SequenceOutput, NoLogprobsWithoutNProbs) {
  QWEN3_OR_SKIP(tok);
  Driver d(tok);
  const TokenOutput t = d.next(11);
  EXPECT_EQ(t.event.logprob, 0.0f);
  EXPECT_TRUE(t.event.top_logprobs.empty());
}

TEST(SequenceOutput, FinishedCarriesReasonErrorAndStats) {
  QWEN3_OR_SKIP(tok);
  Driver d(tok);
  RequestStats st;
  st.generated_tokens = 3;
  const EngineEvent f = d.out->finished(FinishReason::Error, "boom", st);
  EXPECT_EQ(f.reason, FinishReason::Error);
  EXPECT_EQ(f.error, "boom");
  EXPECT_EQ(f.stats.generated_tokens, 3);
}

TEST(SequenceOutput, BadSamplerParametersThrow) {
  QWEN3_OR_SKIP(tok);
  GenerationRequest req;
  SamplerParams p;
  p.top_p = 2.0f;
  req.sampling = p;
  const VocabAccess v{static_cast<int32_t>(tok.n_vocab()), nullptr, nullptr};
  EXPECT_THROW(SequenceOutput(req, tok, v), Error);
}

}  // namespace
}  // namespace hearth
