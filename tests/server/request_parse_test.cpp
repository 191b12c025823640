// Request parsing and validation: OpenAI and llama-server names, types, ranges, refusals.
#include <gtest/gtest.h>

#include "server/api_error.h"
#include "server/prompt_builder.h"
#include "server/request.h"
#include "util/error.h"

namespace hearth::server {
namespace {

using nlohmann::json;

// The ApiError a parse throws (status 0 when it does not throw).
template <typename F>
ApiError error_of(F f) {
  try {
    f();
  } catch (const ApiError& e) {
    return e;
  }
  return ApiError(0, "no error", "", "", "");
}

json chat(json extra = json::object()) {
  json b = {{"model", "m"}, {"messages", json::array({{{"role", "user"}, {"content", "hi"}}})}};
  b.update(extra);
  return b;
}

TEST(ParseBody, MalformedJsonIs400) {
  auto e = error_of([] { parse_json_body("{\"a\":"); });
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.code, "invalid_json");
  e = error_of([] { parse_json_body("[1,2]"); });
  EXPECT_EQ(e.status, 400);
  e = error_of([] { parse_json_body(""); });
  EXPECT_EQ(e.status, 400);
  // Found by request_fuzz: a number out of double's range is the parser's out_of_range.
  e = error_of([] { parse_json_body(R"({"max_tokens":1e400})"); });
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.code, "invalid_json");
  EXPECT_NO_THROW(parse_json_body("{}"));
}

TEST(ParseChat, Basics) {
  ParsedRequest r = parse_chat_request(chat({{"stream", true},
                                             {"stream_options", {{"include_usage", true}}},
                                             {"max_completion_tokens", 7},
                                             {"temperature", 0},
                                             {"seed", 3},
                                             {"stop", "END"},
                                             {"logprobs", true},
                                             {"top_logprobs", 2}}));
  EXPECT_EQ(r.model, "m");
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  ASSERT_TRUE(r.max_tokens);
  EXPECT_EQ(*r.max_tokens, 7);
  EXPECT_EQ(r.sampling.temperature, 0.0f);
  ASSERT_TRUE(r.sampling.seed);
  EXPECT_EQ(*r.sampling.seed, 3u);
  ASSERT_EQ(r.stop.size(), 1u);
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.top_logprobs, 2);
  ASSERT_EQ(r.messages.size(), 1u);
  EXPECT_EQ(r.messages[0].content, "hi");
}

// The values a chat template reads (messages, tools, chat_template_kwargs) keep the order the
// client wrote their keys in (a template's tojson shows it), from the body's one parse.
TEST(ParseChat, TemplateValuesKeepTheClientsKeyOrder) {
  const std::string body = R"({"model":"m",
    "messages":[{"role":"user","content":"hi","name":"zed"}],
    "tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object",
      "properties":{"zeta":{"type":"string"},"alpha":{"type":"integer"}}}}}],
    "chat_template_kwargs":{"zz":1,"aa":2}})";
  const ParsedRequest r = parse_chat_request(parse_json_body(body));
  EXPECT_EQ(r.messages_json.dump(), R"([{"role":"user","content":"hi","name":"zed"}])");
  EXPECT_EQ(r.tools[0]["function"]["parameters"]["properties"].dump(),
            R"({"zeta":{"type":"string"},"alpha":{"type":"integer"}})");
  EXPECT_EQ(r.chat_template_kwargs.dump(), R"({"zz":1,"aa":2})");
  EXPECT_EQ(r.messages.at(0).content, "hi");  // and the typed reads see the same body
}

// response_format, json_schema and grammar each give the reply's grammar; text gives none.
TEST(ParseChat, OutputFormatsGiveAGrammar) {
  EXPECT_EQ(parse_chat_request(chat()).grammar, nullptr);
  EXPECT_EQ(parse_chat_request(chat({{"response_format", {{"type", "text"}}}})).grammar, nullptr);
  const auto object = parse_chat_request(chat({{"response_format", {{"type", "json_object"}}}}));
  ASSERT_NE(object.grammar, nullptr);
  const json schema = {
      {"type", "object"}, {"properties", {{"n", {{"type", "integer"}}}}}, {"required", {"n"}}};
  const auto named = parse_chat_request(
      chat({{"response_format",
             {{"type", "json_schema"}, {"json_schema", {{"name", "s"}, {"schema", schema}}}}}}));
  ASSERT_NE(named.grammar, nullptr);
  const auto llama =
      parse_llama_completion_request({{"prompt", "x"}, {"grammar", "root ::= \"yes\" | \"no\""}});
  ASSERT_NE(llama.grammar, nullptr);
  EXPECT_EQ(llama.grammar->rule_name(llama.grammar->root()), "root");
  EXPECT_NE(parse_llama_completion_request({{"prompt", "x"}, {"json_schema", schema}}).grammar,
            nullptr);
}

TEST(ParseChat, ContentParts) {
  json b = chat();
  b["messages"][0]["content"] =
      json::array({{{"type", "text"}, {"text", "a"}}, {{"type", "text"}, {"text", "b"}}});
  EXPECT_EQ(parse_chat_request(b).messages[0].content, "ab");
  b["messages"][0]["content"] = json::array({{{"type", "image_url"}, {"image_url", "x"}}});
  auto e = error_of([&] { parse_chat_request(b); });
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.param, "messages[0].content[0].type");
}

TEST(ParseChat, RejectsWrongTypesNamingTheParameter) {
  struct Case {
    json extra;
    std::string param;
  };
  const std::vector<Case> cases = {
      {{{"temperature", "hot"}}, "temperature"},
      {{{"temperature", 2.5}}, "temperature"},
      {{{"top_p", -0.1}}, "top_p"},
      {{{"max_tokens", 0}}, "max_tokens"},
      {{{"max_tokens", 1.5}}, "max_tokens"},
      {{{"stream", "yes"}}, "stream"},
      {{{"stop", json::array({1})}}, "stop[0]"},
      {{{"stop", ""}}, "stop[0]"},
      {{{"messages", "hi"}}, "messages"},
      {{{"messages", json::array()}}, "messages"},
      {{{"messages", json::array({{{"role", "wizard"}, {"content", "x"}}})}}, "messages[0].role"},
      {{{"messages", json::array({{{"content", "x"}}})}}, "messages[0].role"},
      {{{"messages", json::array({{{"role", "user"}}})}}, "messages[0].content"},
      {{{"n", 2}}, "n"},
      {{{"response_format",
         {{"type", "json_schema"},
          {"json_schema", {{"name", "s"}, {"schema", {{"type", "integer"}, {"minimum", "x"}}}}}}}},
       "response_format.json_schema.schema"},
      {{{"json_schema", {{"$ref", "#/$defs/missing"}}}}, "json_schema"},
      {{{"grammar", "root ::= [a-"}}, "grammar"},
      {{{"grammar", "root ::= \"x\""}, {"response_format", {{"type", "json_object"}}}}, "grammar"},
      {{{"stream_options", {{"include_usage", true}}}}, "stream_options"},  // without stream
      {{{"top_logprobs", 3}}, "top_logprobs"},                              // without logprobs
      {{{"reasoning_format", "magic"}}, "reasoning_format"},
      {{{"truncation", "sometimes"}}, "truncation"},
      {{{"seed", -5}}, "seed"},
      {{{"top_k", -2}}, "top_k"},
      {{{"chat_template_kwargs", "x"}}, "chat_template_kwargs"},
  };
  for (const Case& c : cases) {
    auto e = error_of([&] { parse_chat_request(chat(c.extra)); });
    EXPECT_EQ(e.status, 400) << c.extra.dump();
    EXPECT_EQ(e.param, c.param) << c.extra.dump() << ": " << e.what();
    EXPECT_EQ(e.to_json()["error"]["param"], c.param);
  }
  auto e = error_of([] { parse_chat_request(json{{"model", "m"}}); });
  EXPECT_EQ(e.param, "messages");
  EXPECT_EQ(e.code, "missing_required_parameter");
}

TEST(ParseChat, NullsReadAsAbsent) {
  ParsedRequest r = parse_chat_request(chat({{"temperature", nullptr}, {"stop", nullptr}}));
  // The default the engine gets (the parse used to keep a 1.0 of its own that nothing used).
  EXPECT_EQ(r.sampling.temperature, request_sampler_defaults().temperature);
  EXPECT_TRUE(r.stop.empty());
}

TEST(ParseCompletions, PromptForms) {
  EXPECT_EQ(parse_completions_request({{"prompt", "abc"}}).prompt_text, "abc");
  EXPECT_EQ(parse_completions_request({{"prompt", json::array({"abc"})}}).prompt_text, "abc");
  auto r = parse_completions_request({{"prompt", json::array({1, 2, 3})}});
  EXPECT_TRUE(r.prompt_is_tokens);
  EXPECT_EQ(r.prompt_tokens, (std::vector<int32_t>{1, 2, 3}));
  r = parse_completions_request({{"prompt", json::array({json::array({4, 5})})}});
  EXPECT_EQ(r.prompt_tokens, (std::vector<int32_t>{4, 5}));
  EXPECT_EQ(*parse_completions_request({{"prompt", "x"}}).max_tokens, 16);  // OpenAI's default
  EXPECT_EQ(error_of([] {
              parse_completions_request({{"prompt", json::array({"a", "b"})}});
            }).param,
            "prompt");
  EXPECT_EQ(error_of([] {
              parse_completions_request({{"prompt", json::array({1, -1})}});
            }).param,
            "prompt[1]");
  EXPECT_EQ(error_of([] { parse_completions_request(json::object()); }).param, "prompt");
  EXPECT_EQ(error_of([] {
              parse_completions_request({{"prompt", "x"}, {"suffix", "y"}});
            }).param,
            "suffix");
  r = parse_completions_request({{"prompt", "x"}, {"logprobs", 3}, {"echo", true}});
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.top_logprobs, 3);
  EXPECT_TRUE(r.echo);
}

TEST(ParseLlamaCompletion, LlamaServerNames) {
  auto r = parse_llama_completion_request({{"prompt", "Once"},
                                           {"n_predict", 12},
                                           {"temperature", 0.5},
                                           {"top_k", 20},
                                           {"top_p", 0.9},
                                           {"min_p", 0.1},
                                           {"typical_p", 0.95},
                                           {"repeat_penalty", 1.1},
                                           {"repeat_last_n", 32},
                                           {"seed", -1},
                                           {"n_probs", 3},
                                           {"cache_prompt", false},
                                           {"id_slot", 0},
                                           {"stop", json::array({"\n\n"})},
                                           {"mirostat", 0}});
  EXPECT_EQ(*r.max_tokens, 12);
  EXPECT_FLOAT_EQ(r.sampling.temperature, 0.5f);
  EXPECT_EQ(r.sampling.top_k, 20);
  EXPECT_FLOAT_EQ(r.sampling.min_p, 0.1f);
  EXPECT_FLOAT_EQ(r.sampling.repeat_penalty, 1.1f);
  EXPECT_EQ(r.sampling.repeat_last_n, 32);
  EXPECT_FALSE(r.sampling.seed);  // -1: random
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.top_logprobs, 3);
  EXPECT_FALSE(r.cache_prompt);
  EXPECT_EQ(r.id_slot, 0);
  EXPECT_FALSE(parse_llama_completion_request({{"prompt", "x"}, {"n_predict", -1}}).max_tokens);
  EXPECT_FLOAT_EQ(parse_llama_completion_request({{"prompt", "x"}}).sampling.temperature, 0.8f);
  EXPECT_EQ(error_of([] {
              parse_llama_completion_request({{"prompt", "x"}, {"n_predict", -2}});
            }).param,
            "n_predict");
}

TEST(Sampling, ParsedOnceIntoTheSamplerChain) {
  json body = {{"temperature", 0.25},         {"seed", 42},       {"top_k", 7},
               {"logit_bias", {{"5", -100}}}, {"logprobs", true}, {"top_logprobs", 3}};
  VocabAccess vocab;
  vocab.n_vocab = 100;
  const ParsedRequest pr = parse_chat_request(chat(body), vocab);
  EXPECT_FLOAT_EQ(pr.sampling.temperature, 0.25f);
  EXPECT_EQ(pr.sampling.seed, 42u);
  EXPECT_EQ(pr.sampling.top_k, 7);
  ASSERT_EQ(pr.sampling.logit_bias.size(), 1u);
  EXPECT_EQ(pr.sampling.logit_bias[0].token, 5);
  EXPECT_EQ(pr.sampling.n_probs, 3);
  // Values only the sampler layer checks still fail with the parameter named.
  try {
    parse_chat_request(chat({{"dry_multiplier", -1}}), vocab);
    FAIL() << "no error";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400);
    EXPECT_EQ(e.param, "dry_multiplier");
    EXPECT_EQ(e.code, "invalid_value");
    EXPECT_NE(std::string(e.what()).find("dry_multiplier"), std::string::npos) << e.what();
  }
  // mirostat is checked only there too: its error names it.
  auto e = error_of([&] { parse_chat_request(chat({{"mirostat", 7}}), vocab); });
  EXPECT_EQ(e.param, "mirostat");
  EXPECT_EQ(e.code, "invalid_value");
  // A logit_bias token past the vocabulary names logit_bias.
  e = error_of([&] {
    parse_completions_request({{"prompt", "x"}, {"logit_bias", {{"100", 1}}}}, vocab);
  });
  EXPECT_EQ(e.param, "logit_bias");
}

// The defaults are written once, and every route starts from them (llama-server's).
TEST(Sampling, EveryRouteStartsFromTheSameDefaults) {
  const SamplerParams d = request_sampler_defaults();
  EXPECT_FLOAT_EQ(d.temperature, 0.8f);
  for (const ParsedRequest& r :
       {parse_chat_request(chat()), parse_completions_request({{"prompt", "x"}}),
        parse_llama_completion_request({{"prompt", "x"}})}) {
    EXPECT_FLOAT_EQ(r.sampling.temperature, d.temperature);
    EXPECT_EQ(r.sampling.top_k, d.top_k);
    EXPECT_FLOAT_EQ(r.sampling.top_p, d.top_p);
    EXPECT_FLOAT_EQ(r.sampling.min_p, d.min_p);
    EXPECT_EQ(r.sampling.n_probs, 0);
  }
}

TEST(PromptBuilder, ContextCheckCarriesTheCounts) {
  EXPECT_NO_THROW(check_context(10, 20, 30));
  auto e = error_of([] { check_context(10, 21, 30); });
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.code, "context_length_exceeded");
  EXPECT_NE(std::string(e.what()).find("30"), std::string::npos);
  EXPECT_NE(std::string(e.what()).find("31"), std::string::npos);
  e = error_of([] { check_context(30, std::nullopt, 30); });
  EXPECT_EQ(e.code, "context_length_exceeded");
}

}  // namespace
}  // namespace hearth::server
