// Requests built to hurt the server, and the connection handling every client relies on: deeply
// nested JSON in any field, grammars the vocabulary cannot follow, chunked bodies with trailer
// fields, kept-alive connections (no Nagle stall), and a reply cut by a full KV pool.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "raw_http.h"
#include "server_fixture.h"

namespace hearth::server {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

class HostileInput : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!test::shared_exists("models/stories260K.gguf")) return;
    srv_ = new test::ServingFixture(ServerOptions{}, true);
  }
  static void TearDownTestSuite() {
    delete srv_;
    srv_ = nullptr;
  }
  void SetUp() override {
    HEARTH_SHARED_OR_SKIP(path, "models/stories260K.gguf");
    (void)path;
  }
  static std::pair<int, json> post(const std::string& body,
                                   const std::string& path = "/v1/chat/completions") {
    auto c = srv_->client();
    auto r = c.Post(path.c_str(), body, "application/json");
    if (!r) return {0, json()};
    return {r->status, json::parse(r->body, nullptr, false)};
  }
  static bool healthy() {
    auto c = srv_->client();
    auto r = c.Get("/health");
    return r && r->status == 200;
  }
  static test::ServingFixture* srv_;
};
test::ServingFixture* HostileInput::srv_ = nullptr;

std::string nested_arrays(size_t depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

std::string nested_objects(size_t depth) {
  std::string s;
  for (size_t i = 0; i < depth; ++i) s += R"({"a":)";
  return s + "1" + std::string(depth, '}');
}

// A chat body with `deep` spliced in as raw JSON text where `where` says.
std::string body_with(const std::string& where, const std::string& deep) {
  const std::string user = R"({"role":"user","content":"Hi"})";
  const std::string tail = R"(,"max_tokens":2})";
  if (where == "message field")
    return R"({"messages":[{"role":"user","content":"Hi","x":)" + deep + "}]" + tail;
  if (where == "chat_template_kwargs")
    return R"({"messages":[)" + user + R"(],"chat_template_kwargs":{"x":)" + deep + "}" + tail;
  if (where == "logit_bias")
    return R"({"messages":[)" + user + R"(],"logit_bias":{"5":)" + deep + "}" + tail;
  if (where == "tools[].function")
    return R"({"messages":[)" + user + R"(],"tools":[{"type":"function","function":)" + deep +
           "}]" + tail;
  if (where == "parameters")
    return R"({"messages":[)" + user +
           R"(],"tools":[{"type":"function","function":{"name":"f","parameters":{"x":)" + deep +
           "}}}]" + tail;
  if (where == "tool_calls")
    return R"({"messages":[)" + user + R"(,{"role":"assistant","content":"","tool_calls":)" + deep +
           "}," + user + "]" + tail;
  return R"({"messages":[)" + user + R"(],"response_format":{"type":"json_object","schema":)" +
         deep + "}" + tail;
}

// Nested 100,000 and 1,000,000 levels deep in any field: refused at the parser as a 400 (the
// walks after it recurse once per level), quickly, and the server lives on.
TEST_F(HostileInput, DeeplyNestedJsonAnywhereIsA400AndTheServerLives) {
  for (const char* where : {"message field", "chat_template_kwargs", "logit_bias",
                            "tools[].function", "parameters", "tool_calls", "schema"}) {
    for (size_t depth : {100000u, 1000000u, 10000u}) {
      for (bool objects : {false, true}) {
        const std::string body =
            body_with(where, objects ? nested_objects(depth) : nested_arrays(depth));
        const auto t0 = Clock::now();
        auto [status, j] = post(body);
        const double s = std::chrono::duration<double>(Clock::now() - t0).count();
        EXPECT_EQ(status, 400) << where << " at depth " << depth;
        EXPECT_EQ(j["error"]["code"], "invalid_json") << where << ": " << j.dump().substr(0, 300);
        EXPECT_LT(s, 5.0) << where << " at depth " << depth;
        ASSERT_TRUE(healthy()) << "the server died on " << where << " at depth " << depth;
      }
    }
  }
}

// The limit (util/json_depth.h) is a boundary, not a guess: 128 levels pass, 129 do not.
TEST_F(HostileInput, NestingUpToTheLimitIsAccepted) {
  // The body object and chat_template_kwargs take two levels, "x" the rest.
  auto [ok_status, ok] = post(body_with("chat_template_kwargs", nested_arrays(126)));
  EXPECT_EQ(ok_status, 200) << ok.dump().substr(0, 300);
  auto [bad_status, bad] = post(body_with("chat_template_kwargs", nested_arrays(127)));
  EXPECT_EQ(bad_status, 400) << bad.dump().substr(0, 300);
  // Brackets inside strings are text, not nesting.
  const std::string text(200000, '[');
  auto [s_status, s] = post(json{
      {"messages", json::array({{{"role", "user"}, {"content", text}}})},
      {"max_tokens", 1}}.dump());
  EXPECT_NE(s_status, 0);
  EXPECT_NE(s["error"]["code"], "invalid_json") << s.dump().substr(0, 300);
}

// A grammar that cannot be followed is the request's fault: refused up front with a 400 naming
// the field where that can be known, and a 400 (never a 5xx) when it is found out mid-reply.
TEST_F(HostileInput, GrammarsThatCannotBeFollowedAre400s) {
  std::string flat = "root ::= ";
  for (int i = 0; i < 3000; ++i) flat += fmt::format("{}\"w{}\"", i ? " | " : "", i);
  std::string late = "root ::= \"" + std::string(48, 'x') + "\" tail\ntail ::= ";
  for (int i = 0; i < 3000; ++i) late += fmt::format("{}\"w{}\"", i ? " | " : "", i);
  struct Case {
    json extra;
    std::string param;
  };
  const std::vector<Case> cases = {
      // A class that matches no character: no text matches the grammar.
      {{{"grammar", R"(root ::= [^\x00-\U0010FFFF])"}}, "grammar"},
      {{{"grammar", "root ::= \"a\" x\nx ::= x \"b\" | [^\\x00-\\U0010FFFF]"}}, "grammar"},
      {{{"json_schema", {{"type", "string"}, {"pattern", "^[^\\s\\S]$"}}}}, "json_schema"},
      // 3,000 alternatives alive at the first character: past the matcher's limits.
      {{{"grammar", flat}}, "grammar"},
      // The same, 48 bytes in: found while generating.
      {{{"grammar", late}, {"ignore_eos", true}, {"max_tokens", 64}}, "grammar"},
  };
  for (const Case& k : cases) {
    for (bool stream : {false, true}) {
      json body = {{"messages", json::array({{{"role", "user"}, {"content", "Hi"}}})},
                   {"max_tokens", 8},
                   {"stream", stream}};
      body.update(k.extra);
      auto c = srv_->client();
      auto r = c.Post("/v1/chat/completions", body.dump(), "application/json");
      ASSERT_TRUE(r);
      const std::string what = body.dump().substr(0, 200) + " -> " + r->body.substr(0, 400);
      EXPECT_LT(r->status, 500) << what;
      EXPECT_EQ(r->body.find("server_error"), std::string::npos) << what;
      if (r->status == 400) {
        const json j = json::parse(r->body);
        EXPECT_EQ(j["error"]["param"], k.param) << what;
      } else {  // streamed, found mid-reply: the stream's last event is the 400's error
        EXPECT_TRUE(stream) << what;
        EXPECT_NE(r->body.find("\"grammar_failed\""), std::string::npos) << what;
        EXPECT_NE(r->body.find("\"param\":\"" + k.param + "\""), std::string::npos) << what;
      }
    }
  }
  // A dead alternative beside a live one is dropped, not a refusal.
  json body = {{"messages", json::array({{{"role", "user"}, {"content", "Hi"}}})},
               {"max_tokens", 8},
               {"grammar", R"(root ::= "ok" | "no" [^\x00-\U0010FFFF])"}};
  auto [status, j] = post(body.dump());
  ASSERT_EQ(status, 200) << j.dump();
  EXPECT_EQ(j["choices"][0]["message"]["content"], "ok");
  ASSERT_TRUE(healthy());
}

// A 10,000-value enum is factored into a trie by the schema converter, so it is followed, not
// refused: the reply is one of the values.
TEST_F(HostileInput, ATenThousandValueEnumIsFollowed) {
  json values = json::array();
  for (int i = 0; i < 10000; ++i) values.push_back(fmt::format("item-{}", i * 7919 % 100003));
  json body = {{"messages", json::array({{{"role", "user"}, {"content", "Pick one"}}})},
               {"max_tokens", 64},
               {"response_format",
                {{"type", "json_schema"},
                 {"json_schema", {{"name", "pick"}, {"schema", {{"enum", values}}}}}}}};
  auto [status, j] = post(body.dump());
  ASSERT_EQ(status, 200) << j.dump().substr(0, 400);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop") << j.dump().substr(0, 400);
  const json picked =
      json::parse(j["choices"][0]["message"]["content"].get<std::string>(), nullptr, false);
  EXPECT_NE(std::find(values.begin(), values.end(), picked), values.end()) << j.dump();
}

// A chunked body may end with trailer fields (RFC 9112 §7.1.2); the next request on the
// connection is read from where the body ended.
TEST_F(HostileInput, ChunkedBodiesWithTrailersAreRead) {
  const std::string body = R"({"messages":[{"role":"user","content":"Hi"}],"max_tokens":2})";
  const std::string half1 = body.substr(0, 20), half2 = body.substr(20);
  auto hex = [](size_t n) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%zx", n);
    return std::string(buf);
  };
  test::RawConnection conn(srv_->port());
  ASSERT_TRUE(conn.ok());
  const std::string req =
      "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Transfer-Encoding: chunked\r\n\r\n" +
      hex(half1.size()) + ";ext=1\r\n" + half1 + "\r\n" + hex(half2.size()) + "\r\n" + half2 +
      "\r\n0\r\nX-Checksum: abc\r\nX-Other: 1\r\n\r\n";
  ASSERT_TRUE(conn.send_all(req + "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"));
  const std::string got = conn.read_until("\"status\"", 60000);
  EXPECT_EQ(got.rfind("HTTP/1.1 200", 0), 0u) << got.substr(0, 400);
  EXPECT_NE(got.find("chat.completion"), std::string::npos) << got.substr(0, 400);
  EXPECT_NE(got.find("\"status\""), std::string::npos) << "the pipelined /health: " << got;

  // Malformed chunking is a 400, and an oversized trailer section too.
  for (const std::string& bad :
       {std::string("zz\r\nabc\r\n0\r\n\r\n"), std::string("3\r\nabcdef\r\n0\r\n\r\n"),
        "1\r\n{\r\n0\r\n" + std::string(10000, 'a') + ": b\r\n\r\n",
        std::string("1\r\n{\r\n0\r\nno colon here\r\n\r\n")}) {
    test::RawConnection c(srv_->port());
    ASSERT_TRUE(c.send_all(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" +
        bad));
    const std::string r = c.read_until("}}", 10000);
    EXPECT_EQ(r.rfind("HTTP/1.1 400", 0), 0u) << bad.substr(0, 40) << " -> " << r;
  }
  ASSERT_TRUE(healthy());
}

double median_ms(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Requests on a kept-alive connection are as quick as on a new one: with Nagle's algorithm on
// the server's socket, each small reply waited for the client's delayed ACK (~40 ms).
TEST_F(HostileInput, KeptAliveConnectionsDoNotStall) {
  std::vector<double> kept, fresh;
  httplib::Client keep("127.0.0.1", srv_->port());
  keep.set_keep_alive(true);  // and no TCP_NODELAY: it writes a POST's headers and body apart
  const std::string chat = R"({"messages":[{"role":"user","content":"Hi"}],"max_tokens":1})";
  for (int i = 0; i < 21; ++i) {
    auto t0 = Clock::now();
    auto r = keep.Get("/health");
    kept.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    ASSERT_TRUE(r && r->status == 200);
    t0 = Clock::now();
    httplib::Client once("127.0.0.1", srv_->port());
    auto r2 = once.Get("/health");
    fresh.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    ASSERT_TRUE(r2 && r2->status == 200);
  }
  // A chat turn costs its compute too (slow under the sanitizers): against the same turn on a
  // new connection, alternated.
  std::vector<double> kept_chat, fresh_chat;
  for (int i = 0; i < 11; ++i) {
    auto t0 = Clock::now();
    auto r = keep.Post("/v1/chat/completions", chat, "application/json");
    kept_chat.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    ASSERT_TRUE(r && r->status == 200);
    t0 = Clock::now();
    httplib::Client once("127.0.0.1", srv_->port());
    auto r2 = once.Post("/v1/chat/completions", chat, "application/json");
    fresh_chat.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    ASSERT_TRUE(r2 && r2->status == 200);
  }
  std::printf(
      "[ info ] /health median: kept-alive %.2f ms, new connection %.2f ms; chat: "
      "kept-alive %.2f ms, new connection %.2f ms\n",
      median_ms(kept), median_ms(fresh), median_ms(kept_chat), median_ms(fresh_chat));
  // The stall is a delayed ACK (40 ms on Linux): far above either margin on any machine.
  EXPECT_LT(median_ms(kept), median_ms(fresh) + 20.0);
  EXPECT_LT(median_ms(kept_chat), median_ms(fresh_chat) + 20.0);
}

// A browser's streamed reply ends its connection ("Connection: close"): a browser that aborts
// one would otherwise read on (up to 16 KiB) before closing, and the generation runs until it
// does. API clients (no Fetch Metadata headers) keep theirs.
TEST_F(HostileInput, BrowserStreamsCloseTheirConnection) {
  const std::string body =
      R"({"messages":[{"role":"user","content":"Hi"}],"max_tokens":3,"stream":true})";
  for (bool browser : {true, false}) {
    test::RawConnection conn(srv_->port());
    ASSERT_TRUE(conn.send_all("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n" +
                              std::string(browser ? "Sec-Fetch-Mode: cors\r\n" : "") +
                              "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
                              body));
    const std::string got = conn.read_until(browser ? "" : "\r\n0\r\n\r\n", 30000);
    EXPECT_NE(got.find("[DONE]"), std::string::npos) << got.substr(0, 300);
    EXPECT_EQ(got.find("Connection: close") != std::string::npos, browser) << got.substr(0, 300);
    EXPECT_EQ(conn.peer_closed(), browser);
  }
}

}  // namespace
}  // namespace hearth::server

namespace hearth::server {
namespace {

// A KV pool smaller than the context: a reply that outgrows it says so (400
// context_length_exceeded naming --kv-mem, or the stream's last event), not "length" as if
// max_tokens had been reached.
TEST(KvPoolFull, AReplyCutByAFullPoolSaysSo) {
  HEARTH_SHARED_OR_SKIP(path, "models/stories260K.gguf");
  test::Backend probe(path, 1, 4);
  const size_t per_token = probe.engine->kv_bytes_per_token();
  // Room for 96 tokens (three 32-token blocks) in a 512-token context.
  test::Backend backend(path, 1, 4, 512, "stories260K", per_token * 96);
  backend.info.chat_template.reset();
  test::RunningServer srv(ServerOptions{});
  srv.server.set_backend(*backend.tok, *backend.engine, backend.info);
  const json body = {{"prompt", "Once upon a time"}, {"max_tokens", 300}, {"ignore_eos", true}};
  auto c = srv.client();
  auto r = c.Post("/v1/completions", body.dump(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  const json j = json::parse(r->body, nullptr, false);
  EXPECT_EQ(j["error"]["code"], "context_length_exceeded") << r->body;
  EXPECT_NE(r->body.find("--kv-mem"), std::string::npos) << r->body;

  json streamed = body;
  streamed["stream"] = true;
  auto s = c.Post("/v1/completions", streamed.dump(), "application/json");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->status, 200);
  EXPECT_NE(s->body.find("context_length_exceeded"), std::string::npos) << s->body;
  EXPECT_EQ(s->body.find("\"finish_reason\":\"length\""), std::string::npos) << s->body;

  // Within the pool, max_tokens is still "length".
  const json small = {{"prompt", "Once upon a time"}, {"max_tokens", 8}, {"ignore_eos", true}};
  auto ok = c.Post("/v1/completions", small.dump(), "application/json");
  ASSERT_TRUE(ok);
  ASSERT_EQ(ok->status, 200) << ok->body;
  EXPECT_EQ(json::parse(ok->body)["choices"][0]["finish_reason"], "length");
}

}  // namespace
}  // namespace hearth::server
