// One person, one conversation, the engine on its own thread as the server drives it: every
// finished turn's prompt and reply are in the prefix cache before any later request is matched,
// however long the pause between turns and even when the next request arrives the moment the
// reply finishes. A turn then prefills only its new text.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/shared_data.h"
#include "engine/engine.h"
#include "tools/synth.h"

namespace hearth {
namespace {

struct Turn {
  std::string text;  // the reply as a client receives it
  std::vector<int32_t> tokens;
  RequestStats stats;
  int64_t total() const { return stats.prompt_tokens + stats.generated_tokens; }
};

// Collects one request's events; wait() blocks until its Finished event.
struct Waiter {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  Turn turn;
  std::function<void()> on_finished;  // runs on the engine thread, before the waiter wakes

  void on_event(const EngineEvent& e) {
    std::lock_guard lock(mu);
    turn.text += e.text;
    if (e.kind == EngineEvent::Kind::Token) {
      turn.tokens.push_back(e.token);
      return;
    }
    turn.stats = e.stats;
    if (on_finished) on_finished();
    done = true;
    cv.notify_all();
  }
  Turn wait() {
    std::unique_lock lock(mu);
    EXPECT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return done; }));
    return turn;
  }
};

GenerationRequest text_request(const std::string& text, int n_gen, Waiter& w) {
  GenerationRequest g;
  SamplerParams sp;
  sp.temperature = 0.0f;
  g.sampling = sp;
  g.prompt_text.text = text;
  g.max_tokens = n_gen;
  g.on_event = [&w](const EngineEvent& e) { w.on_event(e); };
  return g;
}

std::string user_turn(const std::string& message) {
  return "<|im_start|>user\n" + message + "<|im_end|>\n<|im_start|>assistant\n";
}

// What a chat client sends back after a reply: the reply, the end of its turn, the next message.
std::string continued(const std::string& prompt, const Turn& reply, const std::string& message) {
  return prompt + reply.text + "<|im_end|>\n" + user_turn(message);
}

class ConversationCache : public ::testing::Test {
 protected:
  void SetUp() override {
    HEARTH_SHARED_OR_SKIP(vocab, "tokenizers/vocab-qwen3.gguf");
    // A tiny random Qwen3 with the real Qwen3 vocabulary (byte-level BPE: text anchoring).
    SynthSpec spec = *synth_preset("tiny-qwen3");
    spec.vocab_path = vocab;
    spec.weight_type = TensorType::Q8_0;
    const std::string path = (std::filesystem::temp_directory_path() /
                              ("hearth-conversation-" + std::to_string(::getpid()) + ".gguf"))
                                 .string();
    write_synthetic_model(spec, path);
    model_ = Model::load(path);
    std::filesystem::remove(path);  // stays mapped
    tok_ = std::make_unique<Tokenizer>(Tokenizer::from_gguf(model_->file()));
    pool_ = std::make_unique<ops::ThreadPool>(2);
    EngineOptions o;
    o.max_seq_tokens = 2048;
    engine_ = std::make_unique<Engine>(*model_, *tok_, o, *pool_);
    engine_->start();  // as the server runs it: the engine thread sleeps when idle
  }
  void TearDown() override {
    if (engine_) engine_->stop();
  }

  Turn run(const std::string& text, int n_gen = 12) {
    Waiter w;
    EXPECT_TRUE(engine_->submit(text_request(text, n_gen, w)).ok());
    return w.wait();
  }

  std::unique_ptr<Model> model_;
  std::unique_ptr<Tokenizer> tok_;
  std::unique_ptr<ops::ThreadPool> pool_;
  std::unique_ptr<Engine> engine_;
};

const std::string kSystem = "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n";

TEST_F(ConversationCache, NextRequestFindsTheFinishedReplyAfterAPause) {
  const std::string p1 = kSystem + user_turn("Name three rivers.");
  const Turn a = run(p1);
  ASSERT_GT(a.stats.generated_tokens, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the user reads the reply
  const std::string p2 = continued(p1, a, "And three lakes?");
  const Turn b = run(p2);
  // All of turn 1 is reused, its reply's last token included; only the new text is prefilled.
  EXPECT_EQ(b.stats.cached_tokens, a.total());
  EXPECT_EQ(b.stats.prefilled_tokens, b.stats.prompt_tokens - a.total());
}

TEST_F(ConversationCache, SameRequestTwiceHitsOnTheSecond) {
  const std::string p = kSystem + user_turn("Write a haiku about a hearth.");
  const Turn first = run(p);
  EXPECT_EQ(first.stats.cached_tokens, 0);
  for (int i = 0; i < 2; ++i) {
    const Turn again = run(p);
    // Everything but the last prompt token, which must run again for its logits.
    EXPECT_EQ(again.stats.cached_tokens, first.stats.prompt_tokens - 1) << "resend " << i;
    EXPECT_EQ(again.tokens, first.tokens) << "resend " << i;  // cached and uncached agree
  }
}

TEST_F(ConversationCache, EightTurnsPrefillOnlyEachTurnsNewText) {
  const char* messages[] = {"Hi there.",        "What is a hearth?", "Why does it glow?",
                            "Tell me a story.", "Make it shorter.",  "Now in French.",
                            "Thanks, and bye.", "One more thing."};
  std::string prompt = kSystem + user_turn(messages[0]);
  Turn prev = run(prompt);
  int64_t prefilled = prev.stats.prefilled_tokens, fresh = prev.stats.prompt_tokens;
  for (int t = 1; t < 8; ++t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(30 * t));  // pauses of every length
    const std::string next = continued(prompt, prev, messages[t]);
    const Turn cur = run(next);
    EXPECT_EQ(cur.stats.cached_tokens, prev.total()) << "turn " << t + 1;
    prefilled += cur.stats.prefilled_tokens;
    fresh += cur.stats.prompt_tokens - prev.total();
    prompt = next;
    prev = cur;
  }
  EXPECT_EQ(prefilled, fresh);  // prefilled / new = 1
}

TEST_F(ConversationCache, EditAndResendHitsUpToTheEdit) {
  std::string prompt = kSystem + user_turn("Hello.");
  Turn prev = run(prompt);
  prompt = continued(prompt, prev, "Tell me about rivers.");
  prev = run(prompt);
  const std::string before_turn3 = prompt + prev.text + "<|im_end|>\n<|im_start|>user\nTell me ";
  const std::string original = before_turn3 + "about lakes in Europe.<|im_end|>\n";
  const std::string edited = before_turn3 + "nothing at all, please.<|im_end|>\n";
  const int64_t turn2_total = prev.total();
  const Turn t3 = run(original + "<|im_start|>assistant\n");
  ASSERT_EQ(t3.stats.cached_tokens, turn2_total);
  const Turn resent = run(edited + "<|im_start|>assistant\n");
  // The cached path of turn 3 is turn 2's tokens and then turn 3's text tokenized; the resent
  // request reuses every token of it whose text lies before the edit.
  const std::vector<int32_t> tail = tok_->encode(
      std::string_view(original).substr(prompt.size() + prev.text.size()), false, true);
  const size_t edit_at = before_turn3.size() - prompt.size() - prev.text.size();
  int64_t expected = turn2_total;
  size_t end = 0;
  for (int32_t id : tail) {
    end += tok_->token_to_piece(id, true).size();
    if (end > edit_at) break;
    ++expected;
  }
  EXPECT_GT(expected, turn2_total);
  EXPECT_EQ(resent.stats.cached_tokens, expected);
}

// The next request arrives while the reply's last token is still uncached (a client answering
// from the Finished callback itself): it waits one step and still finds the whole reply.
TEST_F(ConversationCache, RequestArrivingAsTheReplyFinishesStillHits) {
  const std::string p1 = kSystem + user_turn("Count to five.");
  Waiter first, second, resend;
  std::string p2;
  first.on_finished = [&] {
    p2 = continued(p1, first.turn, "Now backwards.");
    EXPECT_TRUE(engine_->submit(text_request(p2, 8, second)).ok());
    EXPECT_TRUE(engine_->submit(text_request(p1, 8, resend)).ok());
  };
  EXPECT_TRUE(engine_->submit(text_request(p1, 12, first)).ok());
  const Turn a = first.wait();
  const Turn b = second.wait();
  const Turn c = resend.wait();
  EXPECT_EQ(b.stats.cached_tokens, a.total());
  EXPECT_EQ(c.stats.cached_tokens, a.stats.prompt_tokens - 1);
}

// A cancel that arrives after the reply finished (a client hanging up as the last event comes)
// finds the request completing: it changes nothing, and the next turn finds the whole reply.
TEST_F(ConversationCache, ACancelWhileTheReplyCompletesChangesNothing) {
  const std::string p1 = kSystem + user_turn("Name three colours.");
  Waiter first, second;
  std::atomic<int64_t> first_id{-1};
  std::string p2;
  first.on_finished = [&] {
    engine_->cancel(first_id.load());
    p2 = continued(p1, first.turn, "And three more.");
    EXPECT_TRUE(engine_->submit(text_request(p2, 8, second)).ok());
  };
  const SubmitResult r = engine_->submit(text_request(p1, 12, first));
  ASSERT_TRUE(r.ok());
  first_id.store(r.id);
  const Turn a = first.wait();
  const Turn b = second.wait();
  EXPECT_EQ(b.stats.cached_tokens, a.total());
  EXPECT_GT(b.stats.generated_tokens, 0);
}

// Token events always carry a generated id; text held back to the end (an incomplete UTF-8
// character) comes with the Finished event. Regression: with n_probs the server recorded a
// text-only Token event as token -1 and answered 400 "token id -1 out of range".
TEST(EngineEvents, EveryTokenEventCarriesAGeneratedId) {
  HEARTH_SHARED_OR_SKIP(model_path, "models/synthetic/llama-tied-F32.gguf");
  HEARTH_SHARED_OR_SKIP(index_path, "golden/synthetic/index.json");
  std::ifstream in(index_path);
  const nlohmann::json index = nlohmann::json::parse(in);
  auto model = Model::load(model_path);
  const Tokenizer tok = Tokenizer::from_gguf(model->file());
  ops::ThreadPool pool(2);
  EngineOptions o;
  o.max_seq_tokens = 512;
  Engine e(*model, tok, o, pool);
  int tails = 0;
  for (const char* name : {"p8", "p40", "p200"}) {
    GenerationRequest g;
    g.prompt = index["prompts"][name].get<std::vector<int32_t>>();
    g.max_tokens = 32;
    g.n_probs = 1;
    int64_t token_events = 0, generated = -1;
    std::string finished_text;
    g.on_event = [&](const EngineEvent& ev) {
      if (ev.kind == EngineEvent::Kind::Token) {
        ++token_events;
        EXPECT_GE(ev.token, 0) << name;
        EXPECT_LT(ev.token, model->hparams().n_vocab) << name;
        ASSERT_EQ(ev.top_logprobs.size(), 1u) << name;
        EXPECT_GE(ev.top_logprobs[0].token, 0) << name;
      } else {
        generated = ev.stats.generated_tokens;
        finished_text = ev.text;
      }
    };
    ASSERT_TRUE(e.submit(std::move(g)).ok());
    e.run_until_idle();
    EXPECT_EQ(token_events, generated) << name;
    tails += !finished_text.empty();
  }
  // p200's greedy reply ends inside a UTF-8 character: the case this guards.
  EXPECT_GE(tails, 1);
}

// Engine::submit tokenizes a text prompt once and says how many tokens it has; ids the caller
// already made with tokenize_prompt are not tokenized again.
TEST_F(ConversationCache, SubmitTokenizesOnceAndReportsTheCount) {
  const std::string p = kSystem + user_turn("Count the tokens of this prompt, once.");
  Waiter w;
  GenerationRequest g = text_request(p, 2, w);
  const auto want = static_cast<int64_t>(tokenize_prompt(*tok_, g.prompt_text).size());
  const EncodeStats before = tok_->encode_stats();
  const SubmitResult r = engine_->submit(std::move(g));
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.prompt_tokens, want);
  EXPECT_EQ(w.wait().stats.prompt_tokens, want);
  const EncodeStats after = tok_->encode_stats();
  EXPECT_EQ(after.calls - before.calls, 1);
  EXPECT_EQ(after.bytes - before.bytes, static_cast<int64_t>(p.size()));

  Waiter w2;
  // (Nothing in common with the first prompt: a text hit would tokenize the uncached tail.)
  g = text_request("Plain text: these ids come with their text.", 2, w2);
  g.prompt_text.tokens = tokenize_prompt(*tok_, g.prompt_text);
  const auto n = static_cast<int64_t>(g.prompt_text.tokens.size());
  const EncodeStats before2 = tok_->encode_stats();
  const SubmitResult r2 = engine_->submit(std::move(g));
  ASSERT_TRUE(r2.ok()) << r2.error;
  EXPECT_EQ(r2.prompt_tokens, n);
  EXPECT_EQ(w2.wait().stats.prompt_tokens, n);
  EXPECT_EQ(tok_->encode_stats().calls, before2.calls);
}

// The caller's context rule is applied once the prompt is tokenized, before anything runs.
TEST_F(ConversationCache, ContextRuleRefusesWithTheCountBeforeAnyPrefill) {
  const std::string p = kSystem + user_turn("Will this fit?");
  Waiter w;
  GenerationRequest g = text_request(p, 100, w);
  const auto n = static_cast<int64_t>(tokenize_prompt(*tok_, g.prompt_text).size());
  g.context_limit = n + 99;
  g.context_reserve = 100;
  const int64_t prefilled = engine_->metrics().prefilled_tokens;
  const SubmitResult r = engine_->submit(std::move(g));
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(r.context_exceeded);
  EXPECT_EQ(r.prompt_tokens, n);
  EXPECT_EQ(engine_->metrics().prefilled_tokens, prefilled);

  // Exactly full fits; max_tokens < 0 takes the rest of the context.
  Waiter w2;
  g = text_request(p, -1, w2);
  g.context_limit = n + 3;
  g.stop_at_eog = false;
  const SubmitResult ok = engine_->submit(std::move(g));
  ASSERT_TRUE(ok.ok()) << ok.error;
  EXPECT_EQ(w2.wait().stats.generated_tokens, 3);
}

}  // namespace
}  // namespace hearth
