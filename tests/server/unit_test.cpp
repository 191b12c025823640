// Pure pieces of the server: coalescing, auth, SHA-256, metrics text, SSE framing.
#include <gtest/gtest.h>

#include "engine/request.h"
#include "server/auth.h"
#include "server/coalescer.h"
#include "server/metrics.h"
#include "server/metrics_gauges.h"
#include "server/sse.h"
#include "util/sha256.h"

namespace hearth::server {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

TEST(Coalescer, FlushesOnSizeThreshold) {
  Coalescer c({10, 0}, true);
  const auto t = Clock::now();
  EXPECT_FALSE(c.add("hello", t));
  EXPECT_FALSE(c.add(" wor", t));
  auto out = c.add("ld!", t);
  ASSERT_TRUE(out);
  EXPECT_EQ(*out, "hello world!");
  EXPECT_FALSE(c.holding());
  EXPECT_FALSE(c.deadline());
}

TEST(Coalescer, FlushesOnTimeWindow) {
  Coalescer c({1000, 50}, true);
  const auto t = Clock::now();
  EXPECT_FALSE(c.add("a", t));
  ASSERT_TRUE(c.deadline());
  EXPECT_EQ(*c.deadline(), t + milliseconds(50));
  EXPECT_FALSE(c.poll(t + milliseconds(49)));
  EXPECT_FALSE(c.add("b", t + milliseconds(20)));  // the window runs from the oldest delta
  auto out = c.poll(t + milliseconds(50));
  ASSERT_TRUE(out);
  EXPECT_EQ(*out, "ab");
  EXPECT_FALSE(c.poll(t + milliseconds(500)));
}

TEST(Coalescer, DisabledPassesEveryDelta) {
  Coalescer off({24, 50}, false);  // e.g. logprobs requested
  auto out = off.add("x", Clock::now());
  ASSERT_TRUE(out);
  EXPECT_EQ(*out, "x");
  Coalescer zero({0, 0}, true);  // configured off
  out = zero.add("y", Clock::now());
  ASSERT_TRUE(out);
  EXPECT_EQ(*out, "y");
}

TEST(Coalescer, FlushReturnsHeldText) {
  Coalescer c({24, 50}, true);
  c.add("par", Clock::now());
  EXPECT_EQ(c.flush(), "par");
  EXPECT_EQ(c.flush(), "");
}

TEST(Auth, ConstantTimeEqual) {
  EXPECT_TRUE(constant_time_equal("secret", "secret"));
  EXPECT_FALSE(constant_time_equal("secret", "secreT"));
  EXPECT_FALSE(constant_time_equal("secret", "secret2"));
  EXPECT_FALSE(constant_time_equal("", "a"));
  EXPECT_TRUE(constant_time_equal("", ""));
}

TEST(Auth, BearerHeader) {
  EXPECT_TRUE(authorized("", ""));
  EXPECT_TRUE(authorized("k1", "Bearer k1"));
  EXPECT_TRUE(authorized("k1", "bearer k1"));
  EXPECT_FALSE(authorized("k1", "Bearer k2"));
  EXPECT_FALSE(authorized("k1", "k1"));
  EXPECT_FALSE(authorized("k1", "Basic k1"));
  EXPECT_FALSE(authorized("k1", ""));
}

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // Incremental updates across block boundaries agree with one shot.
  std::string big(1000, 'a');
  Sha256 s;
  for (size_t i = 0; i < big.size(); i += 7)
    s.update(big.data() + i, std::min<size_t>(7, big.size() - i));
  EXPECT_EQ(s.hex_digest(), sha256_hex(big));
}

TEST(Metrics, RendersCountersAndHistograms) {
  Metrics m;
  RequestStats s;
  s.prompt_tokens = 10;
  s.cached_tokens = 4;
  s.generated_tokens = 5;
  s.ttft_ms = 30;
  s.decode_ms = 40;  // 10 ms per token after the first
  m.record(s, FinishReason::Stop);
  m.record_http_error(404);
  MetricsGauges g;
  g.engine.kv_blocks = 8;
  g.engine.kv_blocks_free = 6;
  g.engine.cache.lookup_tokens = 10;
  g.engine.cache.hit_tokens = 5;
  g.engine.cache.evictions = 3;
  g.engine.disk.bytes_written = 4096;
  const std::string text = m.render(g);
  EXPECT_NE(text.find("hearth_prompt_tokens_total 10\n"), std::string::npos) << text;
  EXPECT_NE(text.find("hearth_prompt_tokens_cached_total 4\n"), std::string::npos);
  EXPECT_NE(text.find("hearth_generated_tokens_total 5\n"), std::string::npos);
  EXPECT_NE(text.find("hearth_prefix_cache_hit_ratio 0.4\n"), std::string::npos);
  EXPECT_NE(text.find("hearth_kv_pool_usage_ratio 0.25\n"), std::string::npos);
  EXPECT_NE(text.find("hearth_time_to_first_token_ms_bucket{le=\"25\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("hearth_time_to_first_token_ms_bucket{le=\"50\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("hearth_time_per_output_token_ms_bucket{le=\"10\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("hearth_time_per_output_token_ms_count 1\n"), std::string::npos);
  EXPECT_NE(text.find("hearth_http_errors_total{class=\"4xx\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("hearth_prefix_cache_lookup_hit_ratio 0.5\n"), std::string::npos);
  EXPECT_NE(text.find("hearth_prefix_cache_evictions_total 3\n"), std::string::npos);
  EXPECT_NE(text.find("hearth_disk_tier_bytes_written_total 4096\n"), std::string::npos);
}

TEST(Sse, Framing) {
  EXPECT_EQ(sse_frame(nlohmann::json{{"a", "x\ny"}}), "data: {\"a\":\"x\\ny\"}\n\n");
  EXPECT_EQ(sse_done(), "data: [DONE]\n\n");
  // Invalid UTF-8 in a token piece never breaks the frame.
  const std::string f = sse_frame(nlohmann::json{{"t", std::string("\xe2\x82", 2)}});
  EXPECT_EQ(f.rfind("data: ", 0), 0u);
  EXPECT_EQ(f.substr(f.size() - 2), "\n\n");
}

}  // namespace
}  // namespace hearth::server
