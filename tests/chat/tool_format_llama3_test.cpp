#include <gtest/gtest.h>

#include "chat/tool_call_testing.h"

namespace hearth::chat {
namespace {

using testing::parse_every_split;

constexpr ToolFormat kF = ToolFormat::Llama3;

TEST(Llama3ToolCalls, BareCallReply) {
  // As Llama 3.2 / 3.3 Instruct answer with a tool: the whole reply is the call.
  ToolDelta d = parse_every_split(
      kF, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\", \"days\": 3}}");
  EXPECT_EQ(d.content, "");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].name, "get_weather");
  EXPECT_EQ(d.calls[0].arguments, R"({"city":"Paris","days":3})");
  EXPECT_EQ(d.calls[0].id, "");
  // With "type", "arguments" for "parameters", and whitespace around.
  d = parse_every_split(
      kF, "\n{\"type\": \"function\", \"name\": \"get_time\", \"arguments\": {\"tz\": \"UTC\"}}\n");
  EXPECT_EQ(d.content, "");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].name, "get_time");
  EXPECT_EQ(d.calls[0].arguments, R"({"tz":"UTC"})");
}

TEST(Llama3ToolCalls, ParallelBareCalls) {
  const ToolDelta d = parse_every_split(
      kF,
      "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}; {\"name\": "
      "\"get_weather\", \"parameters\": {\"city\": \"Rome\"}}");
  EXPECT_EQ(d.content, "");
  ASSERT_EQ(d.calls.size(), 2u);
  EXPECT_EQ(d.calls[0].arguments, R"({"city":"Paris"})");
  EXPECT_EQ(d.calls[1].name, "get_weather");
  EXPECT_EQ(d.calls[1].arguments, R"({"city":"Rome"})");
}

TEST(Llama3ToolCalls, PythonTagAfterText) {
  // Llama 3.1 with custom tools.
  const ToolDelta d = parse_every_split(
      kF,
      "Let me check.<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": "
      "\"Paris\"}}");
  EXPECT_EQ(d.content, "Let me check.");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].name, "get_weather");
  EXPECT_EQ(d.calls[0].arguments, R"({"city":"Paris"})");
}

TEST(Llama3ToolCalls, ParallelCallsAfterPythonTag) {
  const ToolDelta d = parse_every_split(
      kF,
      "<|python_tag|>{\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", \"parameters\": "
      "{\"x\": [1, 2]}}\n");
  EXPECT_EQ(d.content, "");
  ASSERT_EQ(d.calls.size(), 2u);
  EXPECT_EQ(d.calls[0].name, "a");
  EXPECT_EQ(d.calls[0].arguments, "{}");
  EXPECT_EQ(d.calls[1].name, "b");
  EXPECT_EQ(d.calls[1].arguments, R"({"x":[1,2]})");
}

TEST(Llama3ToolCalls, BuiltinToolCalls) {
  // Llama 3.1's built-in tools are called in Python.
  ToolDelta d =
      parse_every_split(kF, "<|python_tag|>brave_search.call(query=\"weather in Paris\")");
  EXPECT_EQ(d.content, "");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].name, "brave_search");
  EXPECT_EQ(d.calls[0].arguments, R"({"query":"weather in Paris"})");
  d = parse_every_split(
      kF, "<|python_tag|>wolfram_alpha.call(query='it\\'s 2+2', n=3, exact=True, cap=None)");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].name, "wolfram_alpha");
  EXPECT_EQ(d.calls[0].arguments, R"({"cap":null,"exact":true,"n":3,"query":"it's 2+2"})");
}

TEST(Llama3ToolCalls, PythonCodeThatIsNotACallIsContent) {
  for (const std::string text : {
           "<|python_tag|>print(1 + 1)",
           "<|python_tag|>brave_search.call(query=q)",
           "<|python_tag|>brave_search.call(query=\"x\") + 1",
       }) {
    const ToolDelta d = parse_every_split(kF, text);
    EXPECT_TRUE(d.calls.empty()) << text;
    EXPECT_EQ(d.content, text);
  }
}

TEST(Llama3ToolCalls, JsonThatIsNotACallIsContent) {
  for (const std::string text : {
           "{\"answer\": 42}",
           "{\"name\": \"Ann\", \"age\": 3}",  // a name but no arguments: an answer
           "{\"name\": \"f\", \"parameters\": {}} is how a call looks.",
           "{\"name\": \"f\", \"parameters\": {}}; and then",
           "{\"name\": \"f\", \"parameters\": {\"q\": }}",
           "{curly} braces",
           "<|python_tag|>{\"name\": \"f\", \"parameters\": {}} trailing",
       }) {
    const ToolDelta d = parse_every_split(kF, text);
    EXPECT_TRUE(d.calls.empty()) << text;
    EXPECT_EQ(d.content, text);
  }
}

TEST(Llama3ToolCalls, TruncatedReply) {
  for (const std::string text : {
           "{\"name\": \"get_weather\", \"parameters\": {\"ci",
           "Checking.<|python_tag|>{\"name\": \"get_weather\", \"param",
       }) {
    const ToolDelta d = parse_every_split(kF, text);
    EXPECT_TRUE(d.calls.empty()) << text;
    EXPECT_EQ(d.content, text);
  }
}

TEST(Llama3ToolCalls, PlainTextAndPartialTagLookalikes) {
  const std::string text =
      "Write {\"name\": \"f\", \"parameters\": {}} to call; <|python or <|eot and <b>";
  ToolDelta d = parse_every_split(kF, text);
  EXPECT_TRUE(d.calls.empty());
  EXPECT_EQ(d.content, text);
  EXPECT_EQ(parse_every_split(kF, "  ends with <|python_ta").content, "  ends with <|python_ta");
  EXPECT_EQ(parse_every_split(kF, " \n").content, " \n");
}

TEST(Llama3ToolCalls, ContentStreamsBeforeTheEnd) {
  auto parser = make_tool_call_parser(kF);
  EXPECT_EQ(parser->push("The weather").content, "The weather");
  EXPECT_EQ(parser->push(" is fine <|py").content, " is fine ");
  // A reply that starts like a bare call is held only until it cannot be one.
  parser = make_tool_call_parser(kF);
  EXPECT_EQ(parser->push("{\"answer\": ").content, "");
  EXPECT_EQ(parser->push("42} and more").content, "{\"answer\": 42} and more");
  EXPECT_TRUE(parser->finish().empty());
}

}  // namespace
}  // namespace hearth::chat
