// Each API's reply, streamed and answered whole, says the same: the same text (echo, reasoning
// and content), logprobs, token ids, finish reason, usage and end fields, in frames that share one
// id, created and model.
#include <gtest/gtest.h>

#include <httplib.h>

#include <nlohmann/json.hpp>

#include "common/shared_data.h"
#include "raw_http.h"
#include "server_fixture.h"

namespace hearth::server {
namespace {

using nlohmann::json;

class ReplyShapeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!test::shared_exists("models/stories260K.gguf")) return;
    backend_ = new test::Backend(test::shared_path("models/stories260K.gguf"), 4, 16);
    // A template that opens a reasoning block for the reply (reasoning_format "deepseek").
    backend_->info.chat_template =
        "{# a reply's reasoning ends at </think> #}"
        "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|><think>\n{% endif %}";
    ServerOptions o;
    o.coalesce = {8, 0};  // a few frames per reply, split by size alone
    server_ = new test::RunningServer(o);
    server_->server.set_backend(*backend_->tok, *backend_->engine, backend_->info);
  }
  static void TearDownTestSuite() { test::stop_suite(server_, backend_); }
  void SetUp() override {
    HEARTH_SHARED_OR_SKIP(path, "models/stories260K.gguf");
    (void)path;
  }

  // The request answered whole (without its stream_options), then streamed: the body and the
  // SSE payloads.
  static std::pair<json, std::vector<std::string>> both(const std::string& path, json req) {
    auto c = server_->client();
    json whole_req = req;
    whole_req.erase("stream_options");
    auto r = c.Post(path.c_str(), whole_req.dump(), "application/json");
    EXPECT_TRUE(r);
    EXPECT_EQ(r->status, 200) << r->body;
    req["stream"] = true;
    test::RawConnection conn(server_->port);
    EXPECT_TRUE(conn.ok());
    conn.send_all(test::post_request(path, req.dump()));
    const std::string resp = conn.read_until("\r\n0\r\n\r\n");
    return {json::parse(r->body), test::sse_payloads(test::dechunk(resp))};
  }

  static test::Backend* backend_;
  static test::RunningServer* server_;
};
test::Backend* ReplyShapeTest::backend_ = nullptr;
test::RunningServer* ReplyShapeTest::server_ = nullptr;

json keys_of(const json& j) {
  json keys = json::array();
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  return keys;
}

// The frames of an OpenAI stream: one id, created, model and fingerprint, the whole reply's
// kind; [DONE] last.
std::vector<json> openai_frames(const std::vector<std::string>& payloads, const json& whole,
                                const std::string& chunk_object) {
  EXPECT_GE(payloads.size(), 2u);
  EXPECT_EQ(payloads.back(), "[DONE]");
  std::vector<json> frames;
  for (size_t i = 0; i + 1 < payloads.size(); ++i) {
    json f = json::parse(payloads[i]);
    EXPECT_EQ(f["object"], chunk_object);
    EXPECT_EQ(f["model"], whole["model"]);
    EXPECT_EQ(f["system_fingerprint"], whole["system_fingerprint"]);
    EXPECT_EQ(f["id"].get<std::string>().substr(0, 4), whole["id"].get<std::string>().substr(0, 4));
    if (!frames.empty()) {
      EXPECT_EQ(f["id"], frames[0]["id"]);
      EXPECT_EQ(f["created"], frames[0]["created"]);
    }
    frames.push_back(std::move(f));
  }
  return frames;
}

void expect_same_usage(const json& whole, const json& usage_chunk) {
  EXPECT_TRUE(usage_chunk["choices"].empty());
  EXPECT_EQ(usage_chunk["usage"]["prompt_tokens"], whole["usage"]["prompt_tokens"]);
  EXPECT_EQ(usage_chunk["usage"]["completion_tokens"], whole["usage"]["completion_tokens"]);
  EXPECT_EQ(usage_chunk["usage"]["total_tokens"], whole["usage"]["total_tokens"]);
  EXPECT_EQ(keys_of(usage_chunk["usage"]), keys_of(whole["usage"]));
  EXPECT_EQ(keys_of(usage_chunk["timings"]), keys_of(whole["timings"]));
}

TEST_F(ReplyShapeTest, ChatStreamedSaysWhatTheWholeReplySays) {
  for (const bool reasoning : {false, true}) {
    json req = {{"messages", json::array({{{"role", "user"}, {"content", "Tell a story"}}})},
                {"max_tokens", 12},
                {"temperature", 0},
                {"ignore_eos", true},
                {"logprobs", true},
                {"top_logprobs", 2},
                {"stream_options", {{"include_usage", true}}}};
    if (reasoning) req["reasoning_format"] = "deepseek";
    auto [whole, payloads] = both("/v1/chat/completions", req);
    EXPECT_EQ(whole["object"], "chat.completion");
    EXPECT_EQ(keys_of(whole), json::array({"choices", "created", "id", "model", "object",
                                           "system_fingerprint", "timings", "usage"}));
    std::vector<json> frames = openai_frames(payloads, whole, "chat.completion.chunk");
    ASSERT_GE(frames.size(), 3u);
    const json& choice = whole["choices"][0];
    EXPECT_EQ(keys_of(choice), json::array({"finish_reason", "index", "logprobs", "message"}));
    EXPECT_EQ(frames[0]["choices"][0]["delta"], json({{"role", "assistant"}, {"content", ""}}));
    std::string content, thinking;
    json logprobs = json::array();
    for (size_t i = 1; i + 2 < frames.size(); ++i) {
      const json& c = frames[i]["choices"][0];
      EXPECT_TRUE(c["finish_reason"].is_null());
      EXPECT_TRUE(frames[i].contains("usage") && frames[i]["usage"].is_null());
      // The prompt opened the reasoning block, and the model never closes it.
      EXPECT_FALSE(reasoning && c["delta"].contains("content")) << c["delta"].dump();
      content += c["delta"].value("content", "");
      thinking += c["delta"].value("reasoning_content", "");
      for (const json& lp : c["logprobs"]["content"]) logprobs.push_back(lp);
    }
    EXPECT_EQ(content, choice["message"]["content"]);
    EXPECT_EQ(thinking, choice["message"].value("reasoning_content", ""));
    EXPECT_EQ(reasoning, !thinking.empty());
    EXPECT_EQ(choice["message"]["role"], "assistant");
    EXPECT_EQ(reasoning, choice["message"].contains("reasoning_content"));
    EXPECT_TRUE(!reasoning || choice["message"]["content"] == "");
    EXPECT_EQ(logprobs, choice["logprobs"]["content"]);
    const json& last = frames[frames.size() - 2]["choices"][0];
    EXPECT_EQ(last["delta"], json::object());
    EXPECT_EQ(last["finish_reason"], choice["finish_reason"]);
    expect_same_usage(whole, frames.back());
  }
}

TEST_F(ReplyShapeTest, CompletionsStreamedSaysWhatTheWholeReplySays) {
  for (const bool echo : {false, true}) {
    json req = {{"prompt", "Once upon a time"},
                {"max_tokens", 10},
                {"temperature", 0},
                {"ignore_eos", true},
                {"logprobs", 2},
                {"echo", echo},
                {"stream_options", {{"include_usage", true}}}};
    auto [whole, payloads] = both("/v1/completions", req);
    EXPECT_EQ(whole["object"], "text_completion");
    EXPECT_EQ(keys_of(whole), json::array({"choices", "created", "id", "model", "object",
                                           "system_fingerprint", "timings", "usage"}));
    std::vector<json> frames = openai_frames(payloads, whole, "text_completion");
    ASSERT_GE(frames.size(), 2u);
    const json& choice = whole["choices"][0];
    EXPECT_EQ(keys_of(choice), json::array({"finish_reason", "index", "logprobs", "text"}));
    const std::string text = choice["text"];
    EXPECT_EQ(echo, text.rfind("Once upon a time", 0) == 0);
    EXPECT_EQ(choice["logprobs"]["text_offset"][0], echo ? 16 : 0);
    std::string streamed;
    json tokens = json::array();
    for (size_t i = 0; i + 2 < frames.size(); ++i) {
      const json& c = frames[i]["choices"][0];
      EXPECT_TRUE(c["finish_reason"].is_null());
      streamed += c["text"].get<std::string>();
      for (const json& t : c["logprobs"]["tokens"]) tokens.push_back(t);
      EXPECT_EQ(c["logprobs"]["text_offset"][0], 0);  // each chunk counts from its own text
    }
    const json& last = frames[frames.size() - 2]["choices"][0];
    streamed += last["text"].get<std::string>();
    EXPECT_EQ(streamed, text);
    EXPECT_EQ(tokens, choice["logprobs"]["tokens"]);
    EXPECT_TRUE(last["logprobs"].is_null());
    EXPECT_EQ(last["finish_reason"], choice["finish_reason"]);
    expect_same_usage(whole, frames.back());
  }
}

TEST_F(ReplyShapeTest, LlamaCompletionStreamedSaysWhatTheWholeReplySays) {
  json req = {{"prompt", "Once upon a time"}, {"n_predict", 60},       {"temperature", 0},
              {"ignore_eos", true},           {"return_tokens", true}, {"n_probs", 2},
              {"stop", json::array({"the"})}};
  auto [whole, payloads] = both("/completion", req);
  ASSERT_GE(payloads.size(), 2u);
  std::string content;
  json tokens = json::array(), probs = json::array();
  for (size_t i = 0; i + 1 < payloads.size(); ++i) {
    json f = json::parse(payloads[i]);
    EXPECT_EQ(keys_of(f),
              json::array({"completion_probabilities", "content", "id_slot", "stop", "tokens"}));
    EXPECT_EQ(f["stop"], false);
    content += f["content"].get<std::string>();
    for (const json& t : f["tokens"]) tokens.push_back(t);
    for (const json& p : f["completion_probabilities"]) probs.push_back(p);
  }
  EXPECT_EQ(content, whole["content"]);
  EXPECT_EQ(tokens, whole["tokens"]);
  EXPECT_EQ(tokens.size(), whole["tokens_predicted"].get<size_t>());
  EXPECT_EQ(probs, whole["completion_probabilities"]);
  json last = json::parse(payloads.back());  // no [DONE]
  EXPECT_EQ(last["content"], "");
  EXPECT_EQ(last["tokens"], json::array());
  EXPECT_FALSE(last.contains("completion_probabilities"));
  EXPECT_EQ(keys_of(last["timings"]), keys_of(whole["timings"]));
  for (const char* k :
       {"id_slot", "stop", "model", "tokens_predicted", "tokens_evaluated", "truncated",
        "stopped_eos", "stopped_word", "stopped_limit", "stopping_word", "stop_type"})
    EXPECT_EQ(last[k], whole[k]) << k;
  EXPECT_EQ(whole["stop_type"], "word");
  EXPECT_EQ(whole["stopping_word"], "the");
}

}  // namespace
}  // namespace hearth::server
