#include <gtest/gtest.h>

#include "chat/tool_call_testing.h"

namespace hearth::chat {
namespace {

using testing::parse_every_split;

constexpr ToolFormat kF = ToolFormat::Harmony;

// The replies as gpt-oss-20b writes them after the generation prompt <|start|>assistant.
TEST(HarmonyToolCalls, ReasoningThenCall) {
  const ToolDelta d = parse_every_split(
      kF,
      "<|channel|>analysis<|message|>User asks weather in Paris. We need to call "
      "get_weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather "
      "<|constrain|>json<|message|>{\"city\":\"Paris\",\"days\":3}<|call|>");
  EXPECT_EQ(d.reasoning, "User asks weather in Paris. We need to call get_weather.");
  EXPECT_EQ(d.content, "");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].name, "get_weather");
  EXPECT_EQ(d.calls[0].arguments, R"({"city":"Paris","days":3})");
  EXPECT_EQ(d.calls[0].id, "");
}

TEST(HarmonyToolCalls, ReasoningThenFinalAnswer) {
  for (const std::string end : {"<|return|>", ""}) {  // <|return|> is end-of-generation
    const ToolDelta d = parse_every_split(
        kF,
        "<|channel|>analysis<|message|>Simple greeting.<|end|><|start|>assistant<|channel|>"
        "final<|message|>Hello! How can I help?" +
            end);
    EXPECT_EQ(d.reasoning, "Simple greeting.");
    EXPECT_EQ(d.content, "Hello! How can I help?");
    EXPECT_TRUE(d.calls.empty());
  }
}

TEST(HarmonyToolCalls, PreambleThenCall) {
  // Commentary to no one is a preamble for the user: content.
  const ToolDelta d = parse_every_split(
      kF,
      "<|channel|>commentary<|message|>Let me look that up.<|end|><|start|>assistant<|channel|>"
      "commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}");
  EXPECT_EQ(d.content, "Let me look that up.");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].name, "get_weather");
  EXPECT_EQ(d.calls[0].arguments, R"({"city":"Paris"})");
}

TEST(HarmonyToolCalls, RecipientBeforeTheChannel) {
  ToolDelta d = parse_every_split(
      kF,
      "<|channel|>analysis<|message|>Need time.<|end|><|start|>assistant to=functions.get_time"
      "<|channel|>commentary json<|message|>{\"tz\": \"UTC\"}<|call|>");
  EXPECT_EQ(d.reasoning, "Need time.");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].name, "get_time");
  EXPECT_EQ(d.calls[0].arguments, R"({"tz":"UTC"})");
  // Right after the generation prompt's "<|start|>assistant".
  d = parse_every_split(
      kF, " to=functions.get_time<|channel|>commentary json<|message|>{\"tz\": \"UTC\"}<|call|>");
  EXPECT_EQ(d.content, "");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].name, "get_time");
}

TEST(HarmonyToolCalls, ParallelCalls) {
  const ToolDelta d = parse_every_split(
      kF,
      "<|channel|>commentary to=functions.a <|constrain|>json<|message|>{}<|call|><|start|>"
      "assistant<|channel|>commentary to=functions.b <|constrain|>json<|message|>{\"x\":[1,2]}"
      "<|call|>");
  ASSERT_EQ(d.calls.size(), 2u);
  EXPECT_EQ(d.calls[0].name, "a");
  EXPECT_EQ(d.calls[0].arguments, "{}");
  EXPECT_EQ(d.calls[1].name, "b");
  EXPECT_EQ(d.calls[1].arguments, R"({"x":[1,2]})");
  EXPECT_EQ(d.content, "");
}

TEST(HarmonyToolCalls, MalformedCallIsContent) {
  const std::string bad =
      "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
      "<|message|>{\"city\": }<|call|>";
  ToolDelta d = parse_every_split(kF, "<|channel|>analysis<|message|>Hm.<|end|>" + bad);
  EXPECT_EQ(d.reasoning, "Hm.");
  EXPECT_TRUE(d.calls.empty());
  EXPECT_EQ(d.content, bad);
  // A built-in tool's call is not the client's: it stays text.
  const std::string builtin =
      "<|channel|>analysis to=browser.search code<|message|>{\"query\": \"weather\"}<|call|>";
  d = parse_every_split(kF, builtin);
  EXPECT_TRUE(d.calls.empty());
  EXPECT_EQ(d.content, builtin);
}

TEST(HarmonyToolCalls, TruncatedReply) {
  // Cut off inside the arguments: the message as written.
  const std::string cut =
      "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Pa";
  ToolDelta d = parse_every_split(kF, cut);
  EXPECT_TRUE(d.calls.empty());
  EXPECT_EQ(d.content, cut);
  // Cut off inside a header.
  d = parse_every_split(kF, "<|channel|>analysis<|message|>Hm.<|end|><|start|>assistant<|chan");
  EXPECT_EQ(d.reasoning, "Hm.");
  EXPECT_EQ(d.content, "<|start|>assistant<|chan");
  // Cut off inside the reasoning: what was written is reasoning.
  d = parse_every_split(kF, "<|channel|>analysis<|message|>We need to");
  EXPECT_EQ(d.reasoning, "We need to");
  EXPECT_EQ(d.content, "");
}

TEST(HarmonyToolCalls, PlainTextAndPartialMarkerLookalikes) {
  for (const std::string text : {
           "The answer is 42.",
           "to be or not to be",
           "assistant here: <|world|> and <|chan",
           "Tokens: <|channel|> is written\nin headers.",
       }) {
    const ToolDelta d = parse_every_split(kF, text);
    EXPECT_TRUE(d.calls.empty()) << text;
    EXPECT_EQ(d.content, text);
    EXPECT_EQ(d.reasoning, "");
  }
  const ToolDelta d = parse_every_split(kF, "<|channel|>final<|message|>Use <|end or <|ca");
  EXPECT_EQ(d.content, "Use <|end or <|ca");
}

TEST(HarmonyToolCalls, TextStreams) {
  auto parser = make_tool_call_parser(kF);
  EXPECT_EQ(parser->push("<|channel|>analysis<|message|>We ").reasoning, "We ");
  EXPECT_EQ(parser->push("need it.<|e").reasoning, "need it.");
  EXPECT_TRUE(parser->push("nd|><|start|>assistant<|channel|>fin").empty());
  EXPECT_EQ(parser->push("al<|message|>Sunny").content, "Sunny");
  EXPECT_EQ(parser->push(".").content, ".");
  EXPECT_TRUE(parser->finish().empty());
  // A reply without headers streams as content from its first byte.
  parser = make_tool_call_parser(kF);
  EXPECT_EQ(parser->push("Hi").content, "Hi");
}

}  // namespace
}  // namespace hearth::chat
