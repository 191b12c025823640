// The HTTP layer against clients that misbehave: stalled bodies, bad Content-Length, pipelining,
// a port already taken. Loopback only; every wait is bounded.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "raw_http.h"
#include "server/elastic_pool.h"
#include "server/http_server.h"
#include "server_fixture.h"
#include "util/error.h"

namespace hearth::server {
namespace {

using nlohmann::json;
using test::RawConnection;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

struct RawResponse {
  int status = 0;
  std::string head, body;
};

// The responses in `raw`, in order (bodies sized by Content-Length: no chunked replies here).
std::vector<RawResponse> split_responses(const std::string& raw) {
  std::vector<RawResponse> out;
  size_t pos = 0;
  while (pos < raw.size()) {
    const size_t end = raw.find("\r\n\r\n", pos);
    if (end == std::string::npos || raw.compare(pos, 9, "HTTP/1.1 ") != 0) break;
    RawResponse r;
    r.head = raw.substr(pos, end - pos);
    r.status = std::stoi(raw.substr(pos + 9, 3));
    size_t len = 0;
    if (const size_t cl = r.head.find("Content-Length: "); cl != std::string::npos)
      len = std::stoul(r.head.substr(cl + 16));
    r.body = raw.substr(end + 4, len);
    out.push_back(r);
    pos = end + 4 + len;
  }
  return out;
}

std::string stalled_body_request() {
  return "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
         "Content-Length: 100\r\n\r\n{\"pro";
}

class HttpHardening : public ::testing::Test {
 protected:
  void SetUp() override {
    HEARTH_SHARED_OR_SKIP(path, "models/stories260K.gguf");
    (void)path;
  }
};

TEST_F(HttpHardening, HundredStalledBodiesLeaveHealthAnswering) {
  // Default options: the read timeout (5 s) is far longer than the 1 s allowed here, so this is
  // the worker pool's doing, not the timeout's.
  test::ServingFixture srv(ServerOptions{}, true);
  std::vector<std::unique_ptr<RawConnection>> stalled;
  for (int i = 0; i < 100; ++i) {
    stalled.push_back(std::make_unique<RawConnection>(srv.port()));
    ASSERT_TRUE(stalled.back()->ok());
    ASSERT_TRUE(stalled.back()->send_all(stalled_body_request()));
  }
  for (int round = 0; round < 3; ++round) {
    const auto t0 = Clock::now();
    RawConnection c(srv.port());
    ASSERT_TRUE(c.ok());
    c.send_all("GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    const auto r = split_responses(c.read_until("\"ok\"}", 1000));
    const double ms = ms_since(t0);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].status, 200);
    EXPECT_LT(ms, 1000.0);
    std::printf("[ info ] /health with 100 stalled bodies open: %.1f ms\n", ms);
  }
}

TEST_F(HttpHardening, BadContentLengthIs400AtOnce) {
  ServerOptions o;
  o.max_body_bytes = 64 * 1024;
  test::ServingFixture srv(o, true);
  struct Case {
    std::string headers;
    int status;
    std::string code;
  };
  const std::vector<Case> cases = {
      {"Content-Length: -5\r\n", 400, "invalid_content_length"},
      {"Content-Length: abc\r\n", 400, "invalid_content_length"},
      {"Content-Length: 1 2\r\n", 400, "invalid_content_length"},
      {"Content-Length: 0x10\r\n", 400, "invalid_content_length"},
      {"Content-Length: 5\r\nContent-Length: 6\r\n", 400, "invalid_content_length"},
      {"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", 400, "invalid_content_length"},
      {"Transfer-Encoding: gzip\r\n", 400, "invalid_transfer_encoding"},
      {"Content-Length: 99999999999999999999999\r\n", 413, "request_too_large"},
      {"Content-Length: 99999999999\r\n", 413, "request_too_large"},
  };
  for (const Case& k : cases) {
    const auto t0 = Clock::now();
    RawConnection c(srv.port());
    ASSERT_TRUE(c.ok());
    c.send_all("POST /v1/completions HTTP/1.1\r\nHost: x\r\n" + k.headers + "\r\n");
    const std::string raw = c.read_until("", 2000);
    const auto r = split_responses(raw);
    ASSERT_EQ(r.size(), 1u) << k.headers << raw;
    EXPECT_EQ(r[0].status, k.status) << k.headers;
    EXPECT_LT(ms_since(t0), 1000.0) << k.headers;
    EXPECT_TRUE(c.peer_closed()) << "the connection must close: its body was not read";
    const json j = json::parse(r[0].body);
    EXPECT_EQ(j["error"]["code"], k.code) << r[0].body;
    EXPECT_TRUE(j["error"]["param"].is_string()) << r[0].body;
  }
  // A POST with neither length nor chunking has an empty body (not one read until close).
  RawConnection c(srv.port());
  c.send_all("POST /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  const auto r = split_responses(c.read_until("", 2000));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status, 400);
  EXPECT_EQ(json::parse(r[0].body)["error"]["code"], "invalid_json");
}

TEST_F(HttpHardening, PipelinedRequestsAreAnsweredInOrder) {
  test::ServingFixture srv(ServerOptions{}, true);
  const std::string tokenize = R"({"content":"Once upon a time"})";
  RawConnection c(srv.port());
  ASSERT_TRUE(c.ok());
  c.send_all(
      "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
      "POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Content-Length: " +
      std::to_string(tokenize.size()) + "\r\n\r\n" + tokenize +
      "GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  const auto r = split_responses(c.read_until("", 5000));
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(json::parse(r[0].body)["status"], "ok");
  EXPECT_FALSE(json::parse(r[1].body)["tokens"].empty());
  EXPECT_EQ(json::parse(r[2].body)["data"][0]["id"], "stories260K");
  EXPECT_TRUE(c.peer_closed());

  // A GET with a body: httplib leaves the body unread, so it is answered and the connection
  // closed (the body is not parsed as a next request).
  RawConnection g(srv.port());
  g.send_all(
      "GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: 20\r\n\r\n"
      "GET /v1/models HTTP/");
  const auto rg = split_responses(g.read_until("", 3000));
  ASSERT_EQ(rg.size(), 1u);
  EXPECT_EQ(rg[0].status, 200);
  EXPECT_TRUE(g.peer_closed());
}

TEST_F(HttpHardening, ReadTimeoutClosesAStalledConnection) {
  ServerOptions o;
  o.read_timeout = std::chrono::milliseconds(300);
  test::ServingFixture srv(o, true);
  // A body that never completes: 408 once the timeout passes, and the connection closes.
  {
    const auto t0 = Clock::now();
    RawConnection c(srv.port());
    c.send_all(stalled_body_request());
    const auto r = split_responses(c.read_until("", 3000));
    const double ms = ms_since(t0);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].status, 408);
    EXPECT_EQ(json::parse(r[0].body)["error"]["code"], "request_timeout");
    EXPECT_TRUE(c.peer_closed());
    EXPECT_GE(ms, 250.0);
    EXPECT_LT(ms, 2000.0);
    std::printf("[ info ] stalled body answered 408 after %.0f ms (timeout 300)\n", ms);
  }
  // Headers trickled a byte at a time: the timeout bounds the whole request, not each read.
  {
    const auto t0 = Clock::now();
    RawConnection c(srv.port());
    const std::string head = "GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ";
    c.send_all(head);
    for (int i = 0; i < 30 && !c.peer_closed(); ++i) {
      c.send_all("a");
      c.read_until("HTTP/1.1", 100);
    }
    c.read_until("", 2000);
    EXPECT_TRUE(c.peer_closed());
    EXPECT_LT(ms_since(t0), 2500.0);
  }
}

TEST_F(HttpHardening, StreamsAndKeepAliveOutliveTheReadTimeout) {
  ServerOptions o;
  o.read_timeout = std::chrono::milliseconds(20);
  test::ServingFixture srv(o, true);
  RawConnection c(srv.port());
  const json body = {{"prompt", "Once upon a time"},
                     {"n_predict", 400},
                     {"ignore_eos", true},
                     {"n_probs", 2},  // a frame per token: the slowest stream there is
                     {"stream", true}};
  c.send_all(
      "POST /completion HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Content-Length: " +
      std::to_string(body.dump().size()) + "\r\n\r\n" + body.dump());
  const std::string resp = c.read_until("\r\n0\r\n\r\n", 60000);
  const auto frames = test::sse_payloads(test::dechunk(resp));
  ASSERT_FALSE(frames.empty()) << resp.substr(0, 300);
  const json last = json::parse(frames.back());
  EXPECT_EQ(last["stop"], true);
  EXPECT_EQ(last["tokens_predicted"], 400);
  std::printf("[ info ] a %.0f ms stream under a 20 ms read timeout\n",
              last["timings"]["predicted_ms"].get<double>());
  // Idle longer than the read timeout between requests: the keep-alive wait governs that.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_FALSE(c.peer_closed());
  c.send_all("GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  const std::string second = c.read_until("", 3000);
  EXPECT_NE(second.find("{\"status\":\"ok\"}"), std::string::npos) << second.substr(0, 200);
}

TEST(HttpPort, ASecondServerOnAUsedPortFailsSayingSo) {
  ServerOptions o;
  o.port = 0;
  Server first(o);
  const int port = first.bind();
  ServerOptions again;
  again.port = port;
  Server second(again);
  try {
    second.bind();
    FAIL() << "a second server bound port " << port;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("already in use"), std::string::npos) << e.what();
  }
  EXPECT_NE(HttpServer::bind_failure("127.0.0.1", port).find("already in use"), std::string::npos);
  first.shutdown();
}

TEST(HttpPort, ShutdownBeforeRunStillEndsRun) {
  // The start-up hang: shutdown (a failed load) racing run() on another thread.
  for (int i = 0; i < 20; ++i) {
    Server s(ServerOptions{.port = 0});
    s.bind();
    std::thread t([&] { s.run(); });
    if (i % 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const auto t0 = Clock::now();
    s.shutdown();
    t.join();
    EXPECT_LT(ms_since(t0), 1000.0);
  }
}

TEST(ElasticPool, GrowsToTheCapAndRunsEverything) {
  std::atomic<int> ran{0};
  std::atomic<bool> release{false};
  {
    ElasticPool pool(8);
    for (int i = 0; i < 20; ++i)
      pool.enqueue([&] {
        while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        ++ran;
      });
    EXPECT_EQ(pool.threads(), 8u);
    release = true;
    pool.shutdown();
  }
  EXPECT_EQ(ran.load(), 20);
  ElasticPool idle(8);
  idle.enqueue([] {});
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  idle.enqueue([] {});
  EXPECT_EQ(idle.threads(), 1u) << "an idle worker takes the next job";
}

}  // namespace
}  // namespace hearth::server
