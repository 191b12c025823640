// The web chat page's routes (server/webui.h) and GET /props, over loopback: the page and its
// assets served without the API key and under the page's Content-Security-Policy, gzip only when
// asked (and never encoded twice by httplib), /props' fields behind the key. Tests of the page's
// bytes skip when the binary was built without it (no node/npm, or HEARTH_WEBUI=OFF).
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <string>

#include "chat/chat_formatter.h"
#include "common/shared_data.h"
#include "server/props.h"
#include "server/webui.h"
#include "server/webui_assets.h"
#include "server_fixture.h"

namespace hearth::server {
namespace {

using nlohmann::json;

constexpr const char* kCsp =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'";

#define HEARTH_WEBUI_OR_SKIP()                                                                    \
  if (webui_assets().empty())                                                                     \
  GTEST_SKIP() << "SKIP: this binary was built without the web chat page (node and npm were not " \
                  "found at configure time, or HEARTH_WEBUI=OFF)"

std::string bytes(std::span<const unsigned char> b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

const WebAsset& asset(std::string_view path) {
  const WebAsset* a = find_web_asset(webui_assets(), path);
  EXPECT_NE(a, nullptr) << path;
  return *a;
}

// A GET with exactly these headers, the body as it came on the wire (not decompressed).
httplib::Result get_raw(const test::ServingFixture& f, const std::string& path,
                        const httplib::Headers& headers) {
  auto c = f.client();
  c.set_decompress(false);
  return c.Get(path.c_str(), headers);
}

void expect_page_headers(const httplib::Response& r) {
  EXPECT_EQ(r.get_header_value("Content-Security-Policy"), kCsp);
  EXPECT_EQ(r.get_header_value("X-Content-Type-Options"), "nosniff");
  EXPECT_EQ(r.get_header_value("Referrer-Policy"), "no-referrer");
  EXPECT_EQ(r.get_header_value("Cache-Control"), "no-cache");
  EXPECT_EQ(r.get_header_value("Vary"), "Accept-Encoding");
}

TEST(WebuiUnit, AcceptsGzipReadsTheListAndItsQualities) {
  EXPECT_TRUE(accepts_gzip("gzip"));
  EXPECT_TRUE(accepts_gzip("gzip, deflate, br, zstd"));  // what browsers send
  EXPECT_TRUE(accepts_gzip("br;q=1.0, GZIP;q=0.5"));
  EXPECT_TRUE(accepts_gzip("*"));
  EXPECT_TRUE(accepts_gzip("x-gzip"));
  EXPECT_FALSE(accepts_gzip(""));
  EXPECT_FALSE(accepts_gzip("identity"));
  EXPECT_FALSE(accepts_gzip("br, deflate"));
  EXPECT_FALSE(accepts_gzip("gzip;q=0"));
  EXPECT_FALSE(accepts_gzip("gzip; q=0.000, *"));  // the explicit entry outranks *
  EXPECT_FALSE(accepts_gzip("*;q=0"));
  EXPECT_FALSE(accepts_gzip("gzip;q=nonsense"));
}

TEST(WebuiUnit, PathsOfThePage) {
  EXPECT_TRUE(is_webui_path("/"));
  EXPECT_TRUE(is_webui_path("/index.html"));
  EXPECT_TRUE(is_webui_path("/assets/app.js"));
  EXPECT_FALSE(is_webui_path("/assets"));
  EXPECT_FALSE(is_webui_path("/v1/models"));
  EXPECT_FALSE(is_webui_path("/props"));
  const unsigned char b[] = {1};
  const WebAsset assets[] = {{"/", "text/html", b, b}, {"/assets/app.js", "text/javascript", b, b}};
  EXPECT_EQ(find_web_asset(assets, "/index.html"), &assets[0]);
  EXPECT_EQ(find_web_asset(assets, "/assets/app.js"), &assets[1]);
  EXPECT_EQ(find_web_asset(assets, "/assets/other.js"), nullptr);
}

TEST(WebuiRoutes, EmbeddedAssetsAreThePageScriptAndStyle) {
  HEARTH_WEBUI_OR_SKIP();
  EXPECT_EQ(asset("/").mime, "text/html; charset=utf-8");
  EXPECT_EQ(asset("/assets/app.js").mime, "text/javascript; charset=utf-8");
  EXPECT_EQ(asset("/assets/app.css").mime, "text/css; charset=utf-8");
  for (const WebAsset& a : webui_assets()) {
    EXPECT_FALSE(a.plain.empty()) << a.path;
    ASSERT_GE(a.gzip.size(), 2u) << a.path;
    EXPECT_EQ(a.gzip[0], 0x1f) << a.path;  // gzip's magic number
    EXPECT_EQ(a.gzip[1], 0x8b) << a.path;
  }
  EXPECT_NE(bytes(asset("/").plain).find("<html"), std::string::npos);
}

TEST(WebuiRoutes, PageNeedsNoApiKeyButTheApiStillDoes) {
  HEARTH_WEBUI_OR_SKIP();
  ServerOptions o;
  o.api_key = "sekrit";
  test::ServingFixture f(o, false);  // the page is served while the model is still loading
  for (const char* path : {"/", "/index.html"}) {
    auto r = get_raw(f, path, {{"Accept-Encoding", "identity"}});
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 200) << path;
    EXPECT_EQ(r->get_header_value("Content-Type"), "text/html; charset=utf-8");
    EXPECT_FALSE(r->has_header("Content-Encoding"));
    expect_page_headers(*r);
    EXPECT_EQ(r->body, bytes(asset("/").plain));
  }
  auto c = f.client();
  EXPECT_EQ(c.Get("/v1/models")->status, 401);
  EXPECT_EQ(c.Get("/props")->status, 401);
  EXPECT_EQ(c.Post("/", "{}", "application/json")->status, 401);  // only GETs of the page
}

TEST(WebuiRoutes, ScriptAndStyleAndUnknownAssets) {
  HEARTH_WEBUI_OR_SKIP();
  test::ServingFixture f(ServerOptions{}, false);
  auto r = get_raw(f, "/assets/app.js", {{"Accept-Encoding", "identity"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/javascript; charset=utf-8");
  expect_page_headers(*r);
  EXPECT_EQ(r->body, bytes(asset("/assets/app.js").plain));
  r = get_raw(f, "/assets/app.css", {});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/css; charset=utf-8");
  EXPECT_EQ(r->body, bytes(asset("/assets/app.css").plain));
  r = get_raw(f, "/assets/missing.js", {});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(json::parse(r->body)["error"]["code"], "not_found");
}

TEST(WebuiRoutes, GzipOnlyWhenAskedAndEncodedOnce) {
  HEARTH_WEBUI_OR_SKIP();
  test::ServingFixture f(ServerOptions{}, false);
  for (const char* accept : {"gzip", "gzip, deflate, br, zstd"}) {
    auto r = get_raw(f, "/assets/app.js", {{"Accept-Encoding", accept}});
    ASSERT_TRUE(r) << accept;
    EXPECT_EQ(r->status, 200) << accept;
    // httplib would compress a text body again for a client that takes br or gzip.
    EXPECT_EQ(r->get_header_value_count("Content-Encoding"), 1u) << accept;
    EXPECT_EQ(r->get_header_value("Content-Encoding"), "gzip") << accept;
    EXPECT_EQ(r->get_header_value("Content-Type"), "text/javascript; charset=utf-8");
    expect_page_headers(*r);
    EXPECT_EQ(r->body, bytes(asset("/assets/app.js").gzip)) << accept;
  }
  auto r = get_raw(f, "/", {{"Accept-Encoding", "gzip;q=0, br"}});
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->has_header("Content-Encoding"));
  EXPECT_EQ(r->body, bytes(asset("/").plain));
  // A client that decodes gzip itself (httplib's, as a browser) reads the plain page.
  r = f.client().Get("/");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, bytes(asset("/").plain));
}

TEST(WebuiRoutes, NotBuiltSaysSo) {
  if (!webui_assets().empty()) GTEST_SKIP() << "SKIP: this binary carries the web chat page";
  test::ServingFixture f(ServerOptions{}, false);
  auto r = f.client().Get("/");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  const json e = json::parse(r->body)["error"];
  EXPECT_EQ(e["code"], "webui_not_built");
  EXPECT_NE(e["message"].get<std::string>().find("node and npm"), std::string::npos);
}

TEST(WebuiRoutes, NoWebuiTurnsThePageOff) {
  ServerOptions o;
  o.webui = false;
  test::ServingFixture f(o, false);
  for (const char* path : {"/", "/index.html", "/assets/app.js"}) {
    auto r = f.client().Get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 404) << path;
    EXPECT_EQ(json::parse(r->body)["error"]["code"], "not_found") << path;
  }
  o.api_key = "sekrit";  // and the page's paths need the key like any other
  test::ServingFixture keyed(o, false);
  EXPECT_EQ(keyed.client().Get("/")->status, 401);
}

TEST(Props, FieldsLikeLlamaServerBehindTheApiKey) {
  HEARTH_SHARED_OR_SKIP(path, "models/stories260K.gguf");
  ServerOptions o;
  o.api_key = "sekrit";
  test::ServingFixture f(o, true);
  auto c = f.client();
  EXPECT_EQ(c.Get("/props")->status, 401);
  auto r = c.Get("/props", {{"Authorization", "Bearer sekrit"}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json p = json::parse(r->body);
  EXPECT_EQ(p["model_alias"], "stories260K");
  EXPECT_EQ(p["model_path"], path);
  EXPECT_EQ(p["n_ctx"], 512);
  EXPECT_EQ(p["total_slots"], 4);
  EXPECT_EQ(p["chat_template"], chat::ChatFormatter::chatml_template());  // the model has none
  EXPECT_EQ(p["webui"], !webui_assets().empty());
  EXPECT_EQ(p["build_info"].get<std::string>().rfind("hearth 0.", 0), 0u) << p["build_info"];
  const json& g = p["default_generation_settings"];
  EXPECT_EQ(g["n_ctx"], 512);
  const json& s = g["params"];
  for (const char* key : {"temperature",
                          "top_k",
                          "top_p",
                          "min_p",
                          "typical_p",
                          "top_n_sigma",
                          "xtc_probability",
                          "xtc_threshold",
                          "repeat_penalty",
                          "repeat_last_n",
                          "presence_penalty",
                          "frequency_penalty",
                          "dry_multiplier",
                          "dry_base",
                          "dry_allowed_length",
                          "dry_penalty_last_n",
                          "mirostat",
                          "mirostat_tau",
                          "mirostat_eta",
                          "seed",
                          "n_predict",
                          "max_tokens"})
    EXPECT_TRUE(s.contains(key)) << key;
  const SamplerParams d;  // what a request's fields are read over
  EXPECT_FLOAT_EQ(s["temperature"].get<float>(), d.temperature);
  EXPECT_EQ(s["top_k"], d.top_k);
  EXPECT_FLOAT_EQ(s["min_p"].get<float>(), d.min_p);
  EXPECT_EQ(s["seed"], 4294967295u);  // random, in llama-server's words
  EXPECT_EQ(s["n_predict"], -1);
}

TEST(Props, WebuiFalseWhenThePageIsOff) {
  HEARTH_SHARED_OR_SKIP(path, "models/stories260K.gguf");
  ServerOptions o;
  o.webui = false;
  test::ServingFixture f(o, true);
  auto r = f.client().Get("/props");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["webui"], false);
}

TEST(Props, NonFiniteValuesAreNull) {
  ModelInfo m;
  SamplerParams d;
  d.temperature = INFINITY;
  d.top_p = NAN;
  const json p = props_json({m, "", 1, d, false});
  const json round_trip = json::parse(p.dump());  // still valid JSON
  EXPECT_TRUE(round_trip["default_generation_settings"]["params"]["temperature"].is_null());
  EXPECT_TRUE(round_trip["default_generation_settings"]["params"]["top_p"].is_null());
  EXPECT_FLOAT_EQ(round_trip["default_generation_settings"]["params"]["min_p"].get<float>(),
                  d.min_p);
}

}  // namespace
}  // namespace hearth::server
