// Next-turn warming through the real server, with the real Qwen3 chat template and thinking off
// (its generation prompt's empty <think></think> block is not in the history, so the next turn
// diverges from the cached reply right after "<|im_start|>assistant\n"): with warming the next
// turn finds the whole history cached and prefills only its new text; without it, it prefills
// the previous reply again. Replies are the same either way, and the client's hanging up or a
// reply cut by max_tokens breaks nothing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
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
};

class WarmTurn : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!test::shared_exists("tokenizers/vocab-qwen3.gguf") ||
        !test::shared_exists("templates/templates/Qwen-Qwen3-0.6B.jinja"))
      return;
    const std::string path = test::write_tiny_qwen3("warm");
    const std::string tmpl =
        test::read_file(test::shared_path("templates/templates/Qwen-Qwen3-0.6B.jinja"));
    for (int i = 0; i < 2; ++i) {
      backend_[i] = new test::Backend(path, 4, 16, 2048, "tiny-qwen3");
      backend_[i]->info.chat_template = tmpl;
      ServerOptions o;
      o.warm = i == 0;
      server_[i] = new test::RunningServer(o);
      server_[i]->server.set_backend(*backend_[i]->tok, *backend_[i]->engine, backend_[i]->info);
    }
    std::filesystem::remove(path);  // stays mapped
  }
  static void TearDownTestSuite() {
    for (int i = 0; i < 2; ++i) test::stop_suite(server_[i], backend_[i]);
  }
  void SetUp() override {
    HEARTH_SHARED_OR_SKIP(vocab, "tokenizers/vocab-qwen3.gguf");
    HEARTH_SHARED_OR_SKIP(tmpl, "templates/templates/Qwen-Qwen3-0.6B.jinja");
  }

  // i: 0 with warming, 1 without.
  static Reply chat(int i, const json& messages, int max_tokens = 24) {
    auto c = server_[i]->client();
    const json body = {{"messages", messages},
                       {"max_tokens", max_tokens},
                       {"temperature", 0},
                       {"chat_template_kwargs", {{"enable_thinking", false}}}};
    auto r = c.Post("/v1/chat/completions", body.dump(), "application/json");
    EXPECT_TRUE(r);
    if (!r) return {};
    EXPECT_EQ(r->status, 200) << r->body;
    const json j = json::parse(r->body);
    Reply out;
    const json& content = j["choices"][0]["message"]["content"];
    out.content = content.is_string() ? content.get<std::string>() : "";
    out.prompt = j["usage"]["prompt_tokens"];
    out.completion = j["usage"]["completion_tokens"];
    out.cached = j["usage"]["prompt_tokens_details"]["cached_tokens"];
    return out;
  }
  static double metric(int i, const std::string& name) {
    auto r = server_[i]->client().Get("/metrics");
    EXPECT_TRUE(r);
    if (!r) return -1;
    const size_t at = r->body.find("\n" + name + " ");
    return at == std::string::npos ? -1 : std::stod(r->body.substr(at + name.size() + 2));
  }
  // The user reads: the server finishes its background work.
  static void wait_warm_done(int i) {
    for (int k = 0; k < 500 && metric(i, "hearth_warm_requests") != 0; ++k)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  static json user(const std::string& text) { return {{"role", "user"}, {"content", text}}; }

  static test::Backend* backend_[2];
  static test::RunningServer* server_[2];
};
test::Backend* WarmTurn::backend_[2] = {nullptr, nullptr};
test::RunningServer* WarmTurn::server_[2] = {nullptr, nullptr};

TEST_F(WarmTurn, NextTurnPrefillsOnlyItsNewText) {
  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE(i == 0 ? "warm" : "no warm");
    const double warm_before = metric(i, "hearth_warm_tokens_total");
    const double hit_before = metric(i, "hearth_warm_hit_tokens_total");
    json messages = {
        {{"role", "system"}, {"content", "You are terse. Warm test " + std::to_string(i)}},
        user("Name three rivers.")};
    int64_t prefilled = 0, fresh = 0, seen = 0;
    std::vector<std::string> replies;
    for (int t = 0; t < 4; ++t) {
      const Reply r = chat(i, messages);
      replies.push_back(r.content);
      if (t > 0) {
        prefilled += r.prompt - r.cached;
        fresh += r.prompt - seen;
      }
      seen = r.prompt + r.completion;
      messages.push_back({{"role", "assistant"}, {"content", r.content}});
      messages.push_back(user("And one more, number " + std::to_string(t + 2) + "?"));
      wait_warm_done(i);
    }
    ASSERT_GT(fresh, 0);
    const double ratio = static_cast<double>(prefilled) / static_cast<double>(fresh);
    std::printf("%s: prefilled / new = %lld / %lld = %.3f\n", i == 0 ? "warm" : "no warm",
                static_cast<long long>(prefilled), static_cast<long long>(fresh), ratio);
    if (i == 0) {
      EXPECT_LE(ratio, 1.02);
      EXPECT_GT(metric(i, "hearth_warm_tokens_total"), warm_before);
      EXPECT_GT(metric(i, "hearth_warm_hit_tokens_total"), hit_before);
    } else {
      EXPECT_GT(ratio, 1.2) << "without warming each turn re-prefills the previous reply";
      EXPECT_EQ(metric(i, "hearth_warm_tokens_total"), 0);
    }
  }
}

// Greedy replies are the same with and without warming, turn after turn (exactness: the warmed
// history's K/V equals what the next turn would have computed).
TEST_F(WarmTurn, RepliesAreTheSameWithAndWithoutWarming) {
  std::vector<std::string> got[2];
  for (int i = 0; i < 2; ++i) {
    json messages = json::array({user("Tell me a story about a lighthouse.")});
    for (int t = 0; t < 3; ++t) {
      const Reply r = chat(i, messages, t == 1 ? 5 : 24);  // turn 2 is cut by max_tokens
      got[i].push_back(r.content);
      messages.push_back({{"role", "assistant"}, {"content", r.content}});
      messages.push_back(user("Go on."));
      wait_warm_done(i);
    }
  }
  EXPECT_EQ(got[0], got[1]);
}

// A client that hangs up mid-reply gets no warming for that turn, and the server stays sound.
TEST_F(WarmTurn, AClientThatHangsUpIsNotWarmed) {
  const double before = metric(0, "hearth_warm_tokens_total");
  {
    httplib::Client c("127.0.0.1", server_[0]->port);
    c.set_read_timeout(0, 50000);  // gives up after 50 ms: a long reply is still running
    const json body = {{"messages", json::array({user("Write a very long essay about tides.")})},
                       {"max_tokens", 1500},
                       {"temperature", 0},
                       {"ignore_eos", true}};
    c.Post("/v1/chat/completions", body.dump(), "application/json");
  }
  for (int k = 0; k < 500 && metric(0, "hearth_requests_running") != 0; ++k)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(metric(0, "hearth_requests_running"), 0);
  wait_warm_done(0);
  EXPECT_EQ(metric(0, "hearth_warm_tokens_total"), before);
  EXPECT_FALSE(chat(0, json::array({user("Still there?")})).content.empty());
}

}  // namespace
}  // namespace hearth::server
