#include <gtest/gtest.h>

#include "chat/tool_call_testing.h"

namespace hearth::chat {
namespace {

using testing::parse_every_split;

constexpr ToolFormat kF = ToolFormat::CommandR;

TEST(CommandRToolCalls, OneCallAfterText) {
  // As c4ai-command-r7b-12-2024 writes it, once its thinking is split off.
  const ToolDelta d = parse_every_split(
      kF,
      "I will look up the weather in Paris.<|START_ACTION|>[\n    {\"tool_call_id\": \"0\", "
      "\"tool_name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}\n]<|END_ACTION|>");
  EXPECT_EQ(d.content, "I will look up the weather in Paris.");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].name, "get_weather");
  EXPECT_EQ(d.calls[0].arguments, R"({"city":"Paris"})");
  EXPECT_EQ(d.calls[0].id, "0");
}

TEST(CommandRToolCalls, ParallelCalls) {
  const ToolDelta d = parse_every_split(
      kF,
      "<|START_ACTION|>[\n    {\"tool_call_id\": \"0\", \"tool_name\": \"get_weather\", "
      "\"parameters\": {\"city\": \"Paris\"}},\n    {\"tool_call_id\": 1, \"tool_name\": "
      "\"get_time\", \"parameters\": {}}\n]<|END_ACTION|>\n");
  EXPECT_EQ(d.content, "");
  ASSERT_EQ(d.calls.size(), 2u);
  EXPECT_EQ(d.calls[0].name, "get_weather");
  EXPECT_EQ(d.calls[0].id, "0");
  EXPECT_EQ(d.calls[1].name, "get_time");
  EXPECT_EQ(d.calls[1].arguments, "{}");
  EXPECT_EQ(d.calls[1].id, "1");
}

TEST(CommandRToolCalls, ResponseMarkersAreDropped) {
  const ToolDelta d =
      parse_every_split(kF, "<|START_RESPONSE|>It is 18 °C and sunny in Paris.<|END_RESPONSE|>");
  EXPECT_TRUE(d.calls.empty());
  EXPECT_EQ(d.content, "It is 18 °C and sunny in Paris.");
}

TEST(CommandRToolCalls, MalformedCallIsContent) {
  for (const std::string text : {
           "x <|START_ACTION|>[{\"tool_name\": \"f\", \"parameters\": {\"q\": }}]<|END_ACTION|>",
           "<|START_ACTION|>[{\"tool_call_id\": \"0\", \"parameters\": {}}]<|END_ACTION|>",
           "<|START_ACTION|>[{\"tool_name\": \"f\", \"parameters\": [1]}]<|END_ACTION|> y",
           "<|START_ACTION|>I would search.<|END_ACTION|>",
       }) {
    const ToolDelta d = parse_every_split(kF, text);
    EXPECT_TRUE(d.calls.empty()) << text;
    EXPECT_EQ(d.content, text);
  }
}

TEST(CommandRToolCalls, TruncatedReply) {
  // Cut off before <|END_ACTION|>: a complete array is still the calls...
  ToolDelta d =
      parse_every_split(kF,
                        "<|START_ACTION|>[\n    {\"tool_call_id\": \"0\", \"tool_name\": \"f\", "
                        "\"parameters\": {}}\n]");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].name, "f");
  // ... an incomplete one is content.
  const std::string cut = "<|START_ACTION|>[\n    {\"tool_call_id\": \"0\", \"tool_na";
  d = parse_every_split(kF, cut);
  EXPECT_TRUE(d.calls.empty());
  EXPECT_EQ(d.content, cut);
}

TEST(CommandRToolCalls, PlainTextAndPartialMarkerLookalikes) {
  const std::string text = "Tokens like <|START_ or <|END_RESP and <|START_ACT| stay text.";
  const ToolDelta d = parse_every_split(kF, text);
  EXPECT_TRUE(d.calls.empty());
  EXPECT_EQ(d.content, text);
  EXPECT_EQ(parse_every_split(kF, "ends with <|START_RESPONSE").content,
            "ends with <|START_RESPONSE");
}

TEST(CommandRToolCalls, ContentStreams) {
  auto parser = make_tool_call_parser(kF);
  EXPECT_EQ(parser->push("<|START_RESPONSE|>It is").content, "It is");
  EXPECT_EQ(parser->push(" sunny.<|END_RESP").content, " sunny.");
  EXPECT_EQ(parser->push("ONSE|>").content, "");
  EXPECT_TRUE(parser->finish().empty());
}

}  // namespace
}  // namespace hearth::chat
