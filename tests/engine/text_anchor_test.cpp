// Text anchoring: the next turn of a chat resends the previous reply as text, and re-tokenizing
// that text gives other ids than the ones generated. The cache matches the text, keeps the
// generated ids, and the turn prefills only its new text.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "common/shared_data.h"
#include "engine/engine.h"
#include "tools/synth.h"

namespace hearth {
namespace {

struct Result {
  std::vector<int32_t> tokens;
  std::string text;
  RequestStats stats;
};

Result run(Engine& e, const std::string& text, int n_gen, std::vector<LogitBias> bias = {}) {
  Result r;
  GenerationRequest g;
  SamplerParams sp;
  sp.temperature = 0.0f;
  const bool steer = !bias.empty();
  sp.logit_bias = std::move(bias);
  sp.frequency_penalty = steer ? 1000.0f : 0.0f;  // alternate between the biased tokens
  sp.repeat_last_n = -1;
  g.sampling = sp;
  g.prompt_text.text = text;
  g.max_tokens = n_gen;
  g.stop_at_eog = false;
  g.on_event = [&r](const EngineEvent& ev) {
    r.text += ev.text;  // Finished may carry held-back text
    if (ev.kind == EngineEvent::Kind::Token) {
      r.tokens.push_back(ev.token);
    } else {
      r.stats = ev.stats;
    }
  };
  EXPECT_TRUE(e.submit(std::move(g)).ok());
  e.run_until_idle();
  return r;
}

TEST(TextAnchor, RetokenizedReplyStillHits) {
  HEARTH_SHARED_OR_SKIP(vocab, "tokenizers/vocab-qwen3.gguf");
  // A tiny random Qwen3 with the real Qwen3 vocabulary (byte-level BPE).
  SynthSpec spec = *synth_preset("tiny-qwen3");
  spec.vocab_path = vocab;
  spec.weight_type = TensorType::Q8_0;
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("hearth-text-anchor-" + std::to_string(::getpid()) + ".gguf"))
                               .string();
  write_synthetic_model(spec, path);
  auto model = Model::load(path);
  std::filesystem::remove(path);  // stays mapped
  const Tokenizer tok = Tokenizer::from_gguf(model->file());
  ASSERT_NE(tok.bpe(), nullptr) << "this test needs a byte-level BPE vocabulary";
  ops::ThreadPool pool(2);
  EngineOptions o;
  o.max_seq_tokens = 1024;
  Engine e(*model, tok, o, pool);
  const int n_gen = 24;

  const std::string p1 =
      "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nName three rivers."
      "<|im_end|>\n<|im_start|>assistant\n";
  // Steer the reply onto pieces that merge when re-tokenized: " Hel" + "lo" -> " Hello".
  const auto hel = tok.encode(" Hel", false, false), lo = tok.encode("lo", false, false);
  ASSERT_EQ(hel.size(), 1u);
  ASSERT_EQ(lo.size(), 1u);
  ASSERT_EQ(tok.encode(" Hello", false, false).size(), 1u);
  const Result r1 = run(e, p1, n_gen, {{hel[0], 1e4f}, {lo[0], 1e4f}});
  ASSERT_EQ(r1.tokens.size(), static_cast<size_t>(n_gen));
  // The premise: the reply's text does not re-tokenize to the generated ids.
  ASSERT_NE(tok.encode(r1.text, false, false), r1.tokens) << "pick another prompt";

  const std::string p2 = p1 + r1.text +
                         "<|im_end|>\n<|im_start|>user\nAnd three lakes?<|im_end|>\n"
                         "<|im_start|>assistant\n";
  const Result r2 = run(e, p2, 4);
  const int64_t p1_tokens = r1.stats.prompt_tokens;
  // Everything of turn 1 is reused: its prompt and every generated token (the last one is run
  // through the model right after the reply finishes, for the cache).
  EXPECT_EQ(r2.stats.cached_tokens, p1_tokens + n_gen);
  EXPECT_EQ(r2.stats.prefilled_tokens, r2.stats.prompt_tokens - r2.stats.cached_tokens);
  const int64_t new_text_tokens =
      static_cast<int64_t>(tok.encode("<|im_end|>\n<|im_start|>user\nAnd three lakes?<|im_end|>\n"
                                      "<|im_start|>assistant\n",
                                      false, true)
                               .size());
  EXPECT_EQ(r2.stats.prefilled_tokens, new_text_tokens);

  // By token ids alone, the hit would end where the re-tokenized reply diverges.
  const std::vector<int32_t> full = tok.encode(p2, true, true);
  size_t common = 0;
  std::vector<int32_t> turn1 = tok.encode(p1, true, true);
  turn1.insert(turn1.end(), r1.tokens.begin(), r1.tokens.end());
  while (common < full.size() && common < turn1.size() && full[common] == turn1[common]) ++common;
  EXPECT_LT(static_cast<int64_t>(common), r2.stats.cached_tokens);
}

}  // namespace
}  // namespace hearth
