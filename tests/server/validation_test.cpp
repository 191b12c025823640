// Request validation as a client sees it: each malformed field is a 400 naming the parameter;
// every error reply (whatever its status) has param and code set; any model name is accepted
// when one model is served; llama-server's return_tokens.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "raw_http.h"
#include "server/api_error.h"
#include "server/model_names.h"
#include "server_fixture.h"

namespace hearth::server {
namespace {

using nlohmann::json;

class Validation : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!test::shared_exists("models/stories260K.gguf")) return;
    ServerOptions o;
    o.max_body_bytes = 64 * 1024;
    o.api_key = "";
    srv_ = new test::ServingFixture(o, true);
  }
  static void TearDownTestSuite() {
    delete srv_;
    srv_ = nullptr;
  }
  void SetUp() override {
    HEARTH_SHARED_OR_SKIP(path, "models/stories260K.gguf");
    (void)path;
  }

 public:  // for the helpers below
  static json chat(json extra) {
    json b = {{"messages", json::array({{{"role", "user"}, {"content", "Hi"}}})},
              {"max_tokens", 4}};
    b.update(extra);
    return b;
  }
  static std::pair<int, json> post(const std::string& path, const std::string& body) {
    auto c = srv_->client();
    auto r = c.Post(path.c_str(), body, "application/json");
    if (!r) return {0, json()};
    return {r->status, json::parse(r->body, nullptr, false)};
  }

  static test::ServingFixture* srv_;
};
test::ServingFixture* Validation::srv_ = nullptr;

// The error object has a string param and code (never null or absent).
void expect_filled(const json& j, const std::string& what) {
  ASSERT_TRUE(j.is_object() && j.contains("error")) << what << " -> " << j.dump();
  const json& e = j["error"];
  EXPECT_TRUE(e["message"].is_string()) << what << " -> " << j.dump();
  EXPECT_TRUE(e["type"].is_string()) << what << " -> " << j.dump();
  EXPECT_TRUE(e["param"].is_string() && !e["param"].get<std::string>().empty())
      << what << " -> " << j.dump();
  EXPECT_TRUE(e["code"].is_string() && !e["code"].get<std::string>().empty())
      << what << " -> " << j.dump();
}

// A chat request with `extra` merged in, and the parameter its 400 must name.
struct RefusalCase {
  json extra;
  std::string param;
};

void expect_refused(const std::vector<RefusalCase>& cases) {
  for (const RefusalCase& k : cases) {
    const json body = Validation::chat(k.extra);
    auto [status, j] = Validation::post("/v1/chat/completions", body.dump());
    EXPECT_EQ(status, 400) << body.dump() << " -> " << j.dump();
    expect_filled(j, body.dump());
    EXPECT_EQ(j["error"]["param"], k.param) << body.dump() << " -> " << j.dump();
  }
}

TEST_F(Validation, MalformedToolFieldsAre400NamingTheParameter) {
  const json fn = {{"type", "function"}, {"function", {{"name", "get_weather"}}}};
  const std::vector<RefusalCase> cases = {
      {{{"tools", json::array({{{"function", {{"name", 5}, {"parameters", "x"}}}}})}},
       "tools[0].function.name"},
      {{{"tools", json::array({{{"function", {{"name", "f"}}}}})}}, "tools[0].type"},
      {{{"tools", json::array({{{"type", "function"}, {"function", {{"name", 5}}}}})}},
       "tools[0].function.name"},
      {{{"tools", json::array({{{"type", "function"},
                                {"function", {{"name", "f"}, {"parameters", "x"}}}}})}},
       "tools[0].function.parameters"},
      {{{"tools", json::array({{{"type", "function"}, {"function", {{"name", "a b"}}}}})}},
       "tools[0].function.name"},
      {{{"tools",
         json::array({{{"type", "function"}, {"function", {{"name", std::string(65, 'a')}}}}})}},
       "tools[0].function.name"},
      {{{"tools",
         json::array({{{"type", "function"}, {"function", {{"name", "f"}, {"description", 3}}}}})}},
       "tools[0].function.description"},
      {{{"tools",
         json::array({{{"type", "function"}, {"function", {{"name", "f"}, {"strict", "yes"}}}}})}},
       "tools[0].function.strict"},
      {{{"tools", json::array({{{"type", "retrieval"}, {"function", {{"name", "f"}}}}})}},
       "tools[0].type"},
      {{{"tools", json::array({{{"type", "function"}}})}}, "tools[0].function"},
      {{{"tools", json::array({1, nullptr, "a"})}}, "tools[0]"},
      {{{"tools", json::array({fn, 1})}}, "tools[1]"},
      {{{"tools", "f"}}, "tools"},
      {{{"tool_choice", {{"x", 1}}}}, "tool_choice.type"},
      {{{"tool_choice", "sometimes"}}, "tool_choice"},
      {{{"tool_choice", 3}}, "tool_choice"},
      {{{"tool_choice", "required"}}, "tool_choice"},
      {{{"tools", json::array({fn})},
        {"tool_choice", {{"type", "function"}, {"function", {{"name", "other"}}}}}},
       "tool_choice.function.name"},
      {{{"tools", json::array({fn})}, {"tool_choice", {{"type", "function"}, {"function", 1}}}},
       "tool_choice.function"},
      {{{"parallel_tool_calls", "yes"}}, "parallel_tool_calls"},
      {{{"response_format", "json"}}, "response_format"},
      {{{"response_format", json::object()}}, "response_format.type"},
      {{{"response_format", {{"type", 1}}}}, "response_format.type"},
      {{{"response_format", {{"type", "xml"}}}}, "response_format.type"},
      {{{"response_format", {{"type", "json_schema"}}}}, "response_format.json_schema"},
      {{{"response_format",
         {{"type", "json_schema"}, {"json_schema", {{"schema", json::object()}}}}}},
       "response_format.json_schema.name"},
      {{{"response_format",
         {{"type", "json_schema"}, {"json_schema", {{"name", "s"}, {"schema", 1}}}}}},
       "response_format.json_schema.schema"},
      {{{"response_format",
         {{"type", "json_schema"},
          {"json_schema", {{"name", "s"}, {"schema", json::object()}, {"strict", 1}}}}}},
       "response_format.json_schema.strict"},
      {{{"mirostat", 7}}, "mirostat"},
      {{{"logit_bias", 3}}, "logit_bias"},
  };
  expect_refused(cases);
}

TEST_F(Validation, WellFormedToolFieldsAreAccepted) {
  const json tools = json::array(
      {{{"type", "function"},
        {"function",
         {{"name", "get_weather"},
          {"description", "Weather in a city"},
          {"parameters", {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}}},
          {"strict", true}}}}});
  for (const json& extra :
       {json{{"tools", tools}, {"tool_choice", "auto"}, {"parallel_tool_calls", false}},
        json{{"tools", tools}, {"tool_choice", "required"}},
        json{{"tools", tools},
             {"tool_choice", {{"type", "function"}, {"function", {{"name", "get_weather"}}}}}},
        json{{"tool_choice", "none"}}, json{{"response_format", {{"type", "text"}}}},
        json{{"tools", nullptr}, {"tool_choice", nullptr}}}) {
    auto [status, j] = post("/v1/chat/completions", chat(extra).dump());
    EXPECT_EQ(status, 200) << extra.dump() << " -> " << j.dump();
  }
  // Structured output is served: the reply is constrained (a JSON object's opening brace
  // whatever the tiny model would have said).
  for (const json& rf :
       {json{{"type", "json_object"}},
        json{{"type", "json_schema"},
             {"json_schema", {{"name", "s"}, {"schema", {{"type", "object"}}}}}}}) {
    auto [status, j] = post("/v1/chat/completions", chat({{"response_format", rf}}).dump());
    EXPECT_EQ(status, 200) << j.dump();
    const std::string content = j["choices"][0]["message"]["content"];
    EXPECT_EQ(content.substr(0, 1), "{") << j.dump();
  }
}

// Message shapes and fields hearth does not use are still checked as OpenAI checks them: a
// client bug gets a 400 naming the field, not a reply built from half of what it sent.
TEST_F(Validation, MalformedMessagesAndIgnoredFieldsAre400NamingTheField) {
  const json user = {{"role", "user"}, {"content", "Hi"}};
  const auto with_assistant = [&](json calls) {
    json a = {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", std::move(calls)}};
    return json{{"messages", json::array({user, a, user})}};
  };
  const json call = {
      {"id", "c1"}, {"type", "function"}, {"function", {{"name", "f"}, {"arguments", "{}"}}}};
  const std::vector<RefusalCase> cases = {
      {with_assistant(json::array({5})), "messages[1].tool_calls[0]"},
      {with_assistant("call"), "messages[1].tool_calls"},
      {with_assistant(json::array({{{"function", "f"}}})), "messages[1].tool_calls[0].function"},
      {with_assistant(json::array({{{"type", "function"}}})), "messages[1].tool_calls[0].function"},
      {with_assistant(json::array({{{"function", {{"name", 7}}}}})),
       "messages[1].tool_calls[0].function.name"},
      {with_assistant(json::array({{{"function", {{"name", ""}}}}})),
       "messages[1].tool_calls[0].function.name"},
      {with_assistant(json::array({{{"function", {{"name", "f"}, {"arguments", 3}}}}})),
       "messages[1].tool_calls[0].function.arguments"},
      {with_assistant(json::array({{{"id", 1}, {"function", {{"name", "f"}}}}})),
       "messages[1].tool_calls[0].id"},
      {with_assistant(json::array({{{"type", "tool"}, {"function", {{"name", "f"}}}}})),
       "messages[1].tool_calls[0].type"},
      {with_assistant(json::array({call, {{"function", {{"name", 1}}}}})),
       "messages[1].tool_calls[1].function.name"},
      {{{"messages",
         json::array({user, {{"role", "tool"}, {"content", "42"}, {"tool_call_id", 7}}})}},
       "messages[1].tool_call_id"},
      {{{"messages", json::array({{{"role", "user"}, {"content", "Hi"}, {"name", 3}}})}},
       "messages[0].name"},
      {{{"messages",
         json::array(
             {{{"role", "user"}, {"content", "Hi"}, {"tool_calls", json::array({call})}}})}},
       "messages[0].tool_calls"},
      {{{"user", 7}}, "user"},
      {{{"store", "yes"}}, "store"},
      {{{"metadata", {{"k", 1}}}}, "metadata.k"},
      {{{"chat_template_kwargs", {{"enable_thinking", "no"}}}},
       "chat_template_kwargs.enable_thinking"},
      {{{"logit_bias", {{"99999999999999999999", 1}}}}, "logit_bias"},
      {{{"logit_bias", {{"-1", 1}}}}, "logit_bias"},
      {{{"logit_bias", {{"100000000", 1}}}}, "logit_bias"},
  };
  expect_refused(cases);
  // The well-formed versions are answered.
  for (const json& extra :
       {with_assistant(json::array({call})),
        json{{"messages",
              json::array({user, {{"role", "tool"}, {"content", "42"}, {"tool_call_id", "c1"}}})}},
        json{{"user", "u-1"}, {"store", false}, {"metadata", {{"k", "v"}}}},
        json{{"chat_template_kwargs", {{"enable_thinking", false}, {"other", 3}}}},
        json{{"logit_bias", {{"5", 1}}}}}) {
    const json body = chat(extra);
    auto [status, j] = post("/v1/chat/completions", body.dump());
    EXPECT_EQ(status, 200) << body.dump() << " -> " << j.dump();
  }
}

TEST_F(Validation, EveryErrorReplyHasParamAndCode) {
  auto c = srv_->client();
  struct Case {
    std::string method, path, body;
    int status;
  };
  const std::vector<Case> cases = {
      {"POST", "/v1/chat/completions", "{not json", 400},
      {"POST", "/v1/chat/completions", "[]", 400},
      {"POST", "/v1/chat/completions", "", 400},
      {"POST", "/v1/chat/completions", R"({"messages":"hi"})", 400},
      {"POST", "/v1/completions", R"({"prompt":"hi","max_tokens":100000})", 400},
      {"POST", "/v1/completions", R"({"prompt":"hi","n":2})", 400},
      {"POST", "/completion", R"({"prompt":"hi","mirostat":7})", 400},
      {"POST", "/tokenize", R"({"content":1})", 400},
      {"POST", "/detokenize", R"({"tokens":[-1]})", 400},
      {"POST", "/v1/nothing", "{}", 404},
      {"GET", "/v1/nothing", "", 404},
      {"POST", "/v1/completions", std::string(100 * 1024, ' '), 413},
  };
  for (const Case& k : cases) {
    auto r = k.method == "GET" ? c.Get(k.path.c_str())
                               : c.Post(k.path.c_str(), k.body, "application/json");
    ASSERT_TRUE(r) << k.path;
    EXPECT_EQ(r->status, k.status) << k.path << " " << k.body.substr(0, 80) << " -> " << r->body;
    expect_filled(json::parse(r->body, nullptr, false), k.path + " " + k.body.substr(0, 80));
  }
}

TEST_F(Validation, LoadingAndAuthErrorsHaveParamAndCode) {
  ServerOptions o;
  o.api_key = "sekrit";
  test::ServingFixture loading(o, false);  // never turns ready
  auto c = loading.client();
  auto r = c.Get("/health");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  expect_filled(json::parse(r->body), "/health while loading");
  EXPECT_EQ(json::parse(r->body)["error"]["code"], "model_loading");
  r = c.Post("/v1/completions", R"({"prompt":"x"})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  expect_filled(json::parse(r->body), "no API key");
  EXPECT_EQ(json::parse(r->body)["error"]["param"], "Authorization");
  r = c.Post("/v1/completions", {{"Authorization", "Bearer sekrit"}}, R"({"prompt":"x"})",
             "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  expect_filled(json::parse(r->body), "completion while loading");
}

TEST_F(Validation, AnyModelNameIsTheServedModel) {
  for (const char* name : {"default", "gpt-4o-mini", "stories260K", "stories260K.gguf", ""}) {
    json body = chat({{"model", name}});
    auto [status, j] = post("/v1/chat/completions", body.dump());
    EXPECT_EQ(status, 200) << name << " -> " << j.dump();
    EXPECT_EQ(j["model"], "stories260K") << name;
    body = {{"model", name}, {"prompt", "Once"}, {"max_tokens", 2}};
    std::tie(status, j) = post("/v1/completions", body.dump());
    EXPECT_EQ(status, 200) << name << " -> " << j.dump();
    EXPECT_EQ(j["model"], "stories260K") << name;
  }
  auto r = srv_->client().Get("/v1/models");
  ASSERT_TRUE(r);
  EXPECT_EQ(json::parse(r->body)["data"][0]["id"], "stories260K");
}

TEST(ModelNames, SeveralModelsNeedAName) {
  ModelInfo a, b;
  a.id = "alpha";
  a.aliases = {"alpha.gguf"};
  b.id = "beta";
  EXPECT_EQ(resolve_model("anything", {&a}).id, "alpha");
  EXPECT_EQ(resolve_model("", {&a}).id, "alpha");
  EXPECT_EQ(resolve_model("beta", {&a, &b}).id, "beta");
  EXPECT_EQ(resolve_model("alpha.gguf", {&a, &b}).id, "alpha");
  try {
    resolve_model("gamma", {&a, &b});
    FAIL() << "no error";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 404);
    EXPECT_EQ(e.code, "model_not_found");
    EXPECT_EQ(e.param, "model");
  }
}

TEST_F(Validation, ReturnTokensGivesTheGeneratedIds) {
  const json base = {{"prompt", "Once upon a time"},
                     {"n_predict", 12},
                     {"temperature", 0},
                     {"ignore_eos", true},
                     {"return_tokens", true}};
  auto [status, j] = post("/completion", base.dump());
  ASSERT_EQ(status, 200) << j.dump();
  ASSERT_TRUE(j["tokens"].is_array()) << j.dump();
  EXPECT_EQ(j["tokens"].size(), 12u);
  std::vector<int32_t> ids = j["tokens"].get<std::vector<int32_t>>();
  EXPECT_EQ(srv_->tokenizer().decode(ids), j["content"].get<std::string>());

  // Streamed: each frame carries the ids generated since the previous one.
  json sb = base;
  sb["stream"] = true;
  test::RawConnection c(srv_->port());
  c.send_all(test::post_request("/completion", sb.dump()));
  const auto frames = test::sse_payloads(test::dechunk(c.read_until("\r\n0\r\n\r\n", 30000)));
  ASSERT_FALSE(frames.empty());
  std::vector<int32_t> streamed;
  std::string content;
  for (const std::string& f : frames) {
    const json fj = json::parse(f);
    ASSERT_TRUE(fj["tokens"].is_array()) << f;
    for (const json& t : fj["tokens"]) streamed.push_back(t.get<int32_t>());
    content += fj["content"].get<std::string>();
  }
  EXPECT_EQ(streamed, ids);
  EXPECT_EQ(content, j["content"].get<std::string>());

  // Not asked: no tokens field.
  json plain = base;
  plain.erase("return_tokens");
  std::tie(status, j) = post("/completion", plain.dump());
  EXPECT_FALSE(j.contains("tokens"));
  std::tie(status, j) = post("/completion", json{{"prompt", "x"}, {"return_tokens", 1}}.dump());
  EXPECT_EQ(status, 400);
  EXPECT_EQ(j["error"]["param"], "return_tokens");
}

}  // namespace
}  // namespace hearth::server
