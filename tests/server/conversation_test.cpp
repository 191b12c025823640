// One client, one conversation, through the real server: every turn finds the previous turn's
// prompt and reply in the cache (usage.prompt_tokens_details.cached_tokens), the same request
// sent twice hits on the second, an edited and resent message hits up to the edit, and
// llama-server's /completion answers a sequence of token-id prompts with n_probs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/shared_data.h"
#include "server_fixture.h"
#include "tiny_qwen3.h"

namespace hearth::server {
namespace {

using nlohmann::json;

struct Reply {
  std::string content;
  int64_t prompt = 0, completion = 0, cached = 0;
  int64_t total() const { return prompt + completion; }
};

class Conversation : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!test::shared_exists("tokenizers/vocab-qwen3.gguf")) return;
    // A tiny random Qwen3 with the real Qwen3 vocabulary and no chat template (ChatML).
    const std::string path = test::write_tiny_qwen3("conv");
    backend_ = new test::Backend(path, 4, 16, 2048, "tiny-qwen3");
    std::filesystem::remove(path);  // stays mapped
    backend_->info.chat_template.reset();
    // The plain cache's arithmetic, exactly: no next-turn warming (warm_turn_test.cpp).
    ServerOptions o;
    o.warm = false;
    server_ = new test::RunningServer(o);
    server_->server.set_backend(*backend_->tok, *backend_->engine, backend_->info);
  }
  static void TearDownTestSuite() { test::stop_suite(server_, backend_); }
  void SetUp() override {
    HEARTH_SHARED_OR_SKIP(path, "tokenizers/vocab-qwen3.gguf");
    (void)path;
  }

  static Reply chat(const json& messages, int max_tokens = 12) {
    auto c = server_->client();
    const json body = {{"messages", messages}, {"max_tokens", max_tokens}, {"temperature", 0}};
    auto r = c.Post("/v1/chat/completions", body.dump(), "application/json");
    EXPECT_TRUE(r);
    if (!r) return {};
    EXPECT_EQ(r->status, 200) << r->body;
    const json j = json::parse(r->body);
    Reply out;
    out.content = j["choices"][0]["message"]["content"].get<std::string>();
    out.prompt = j["usage"]["prompt_tokens"];
    out.completion = j["usage"]["completion_tokens"];
    out.cached = j["usage"]["prompt_tokens_details"]["cached_tokens"];
    return out;
  }
  static json user(const std::string& text) { return {{"role", "user"}, {"content", text}}; }
  static json assistant(const std::string& text) {
    return {{"role", "assistant"}, {"content", text}};
  }

  static test::Backend* backend_;
  static test::RunningServer* server_;
};
test::Backend* Conversation::backend_ = nullptr;
test::RunningServer* Conversation::server_ = nullptr;

const json kSystem = {{"role", "system"}, {"content", "You are a helpful assistant."}};

// The prompt is tokenized once, by the engine: the server's context check uses its count.
TEST_F(Conversation, ThePromptIsTokenizedOnce) {
  std::string text = "A question nobody asked before:";
  for (int i = 0; i < 60; ++i) text += " word" + std::to_string(i * 7919);
  const EncodeStats before = backend_->tok->encode_stats();
  const Reply r = chat(json::array({user(text)}), 2);
  const EncodeStats after = backend_->tok->encode_stats();
  ASSERT_GT(r.prompt, 0);
  // The whole prompt is the text plus a few bytes of ChatML; a second full tokenization (as the
  // server's own context check once made) would double it.
  EXPECT_GE(after.bytes - before.bytes, static_cast<int64_t>(text.size()));
  EXPECT_LT(after.bytes - before.bytes, static_cast<int64_t>(text.size()) * 3 / 2);

  // Too long for the context: the same 400 with the counts, from the engine's count.
  auto c = server_->client();
  const json body = {{"messages", json::array({user(text)})}, {"max_tokens", 2040}};
  auto res = c.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  const json err = json::parse(res->body)["error"];
  EXPECT_EQ(err["code"], "context_length_exceeded") << res->body;
  EXPECT_NE(err["message"].get<std::string>().find(std::to_string(r.prompt) + " in the prompt"),
            std::string::npos)
      << res->body;
}

TEST_F(Conversation, NextTurnFindsThePreviousPromptAndReply) {
  json messages = {kSystem, user("Name three rivers.")};
  const Reply a = chat(messages);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the user reads
  messages.push_back(assistant(a.content));
  messages.push_back(user("And three lakes?"));
  const Reply b = chat(messages);
  EXPECT_EQ(b.cached, a.total());
}

TEST_F(Conversation, SameRequestTwiceHitsOnTheSecond) {
  const json system = {{"role", "system"}, {"content", "Answer in verse."}};
  const json messages = {system, user("Write a haiku about a hearth.")};
  const Reply first = chat(messages);
  EXPECT_LT(first.cached, 4);  // at most the "<|im_start|>system\n" other tests sent
  const Reply second = chat(messages);
  EXPECT_EQ(second.cached, first.prompt - 1);  // the last prompt token runs for its logits
  EXPECT_EQ(second.content, first.content);
}

TEST_F(Conversation, EightTurnsPrefillOnlyEachTurnsNewText) {
  json messages = json::array({kSystem});
  int64_t prefilled = 0, fresh = 0, seen = 0;
  for (int t = 0; t < 8; ++t) {
    messages.push_back(user("Turn " + std::to_string(t + 1) + ": tell me one more thing."));
    const Reply r = chat(messages);
    if (t > 0) {  // from turn 2 on: prefilled / new = 1
      EXPECT_EQ(r.cached, seen) << "turn " << t + 1;
      prefilled += r.prompt - r.cached;
      fresh += r.prompt - seen;
    }
    seen = r.total();
    messages.push_back(assistant(r.content));
    std::this_thread::sleep_for(std::chrono::milliseconds(20 * t));
  }
  EXPECT_GT(fresh, 0);
  EXPECT_EQ(prefilled, fresh);
}

TEST_F(Conversation, EditedAndResentMessageHitsUpToTheEdit) {
  json messages = {kSystem, user("Hello there.")};
  Reply r = chat(messages);
  messages.push_back(assistant(r.content));
  messages.push_back(user("Tell me about rivers."));
  r = chat(messages);
  messages.push_back(assistant(r.content));
  const int64_t before_turn3 = r.total();
  messages.push_back(user("Tell me about lakes in Europe, please."));
  const Reply t3 = chat(messages);
  EXPECT_EQ(t3.cached, before_turn3);
  messages.back() = user("Tell me about mountains instead.");
  const Reply resent = chat(messages);
  // Turn 2 and the unchanged start of turn 3 ("<|im_start|>user\nTell me about") are reused.
  EXPECT_GT(resent.cached, before_turn3 + 2);
  EXPECT_LT(resent.cached, t3.prompt);
}

// Regression: token-id prompts with n_probs in this order answered 400 "token id -1 out of
// range" on the third (a held-back character at the end of a reply was recorded as token -1).
TEST(CompletionProbs, GoldenPromptsInSequenceAllAnswer) {
  HEARTH_SHARED_OR_SKIP(model_path, "models/synthetic/llama-tied-F32.gguf");
  HEARTH_SHARED_OR_SKIP(index_path, "golden/synthetic/index.json");
  std::ifstream in(index_path);
  const json index = json::parse(in);
  test::Backend b(model_path, 2, 4, 512, "llama-tied-F32");
  test::RunningServer s(ServerOptions{});
  s.server.set_backend(*b.tok, *b.engine, b.info);
  auto c = s.client();
  const int32_t n_vocab = static_cast<int32_t>(b.model->hparams().n_vocab);
  for (const char* name : {"p8", "p40", "p200"}) {
    const json body = {
        {"prompt", index["prompts"][name]}, {"n_predict", 32}, {"temperature", 0}, {"n_probs", 1}};
    auto r = c.Post("/completion", body.dump(), "application/json");
    ASSERT_TRUE(r) << name;
    ASSERT_EQ(r->status, 200) << name << ": " << r->body;
    const json j = json::parse(r->body);
    ASSERT_EQ(j["completion_probabilities"].size(), j["tokens_predicted"].get<size_t>()) << name;
    for (const json& p : j["completion_probabilities"]) {
      EXPECT_GE(p["id"].get<int32_t>(), 0) << name;
      EXPECT_LT(p["id"].get<int32_t>(), n_vocab) << name;
    }
  }
}

}  // namespace
}  // namespace hearth::server
