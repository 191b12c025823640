#include <gtest/gtest.h>

#include "chat/tool_call_testing.h"

namespace hearth::chat {
namespace {

using testing::parse_every_split;

constexpr ToolFormat kF = ToolFormat::Mistral;

TEST(MistralToolCalls, OneCallAfterTextWithId) {
  // As Mistral-Nemo-Instruct-2407 writes it.
  const ToolDelta d = parse_every_split(
      kF,
      "Let me check.[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Paris\", \"unit\": \"c\"}, \"id\": \"abcDEF123\"}]");
  EXPECT_EQ(d.content, "Let me check.");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].name, "get_weather");
  EXPECT_EQ(d.calls[0].arguments, R"({"city":"Paris","unit":"c"})");
  EXPECT_EQ(d.calls[0].id, "abcDEF123");
}

TEST(MistralToolCalls, ParallelCallsInOneArray) {
  // Mistral 7B v0.3 writes a space after the marker and no ids.
  const ToolDelta d = parse_every_split(
      kF,
      "[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, "
      "{\"name\": \"get_time\", \"arguments\": {}}]\n");
  EXPECT_EQ(d.content, "");
  ASSERT_EQ(d.calls.size(), 2u);
  EXPECT_EQ(d.calls[0].name, "get_weather");
  EXPECT_EQ(d.calls[0].arguments, R"({"city":"Paris"})");
  EXPECT_EQ(d.calls[0].id, "");
  EXPECT_EQ(d.calls[1].name, "get_time");
  EXPECT_EQ(d.calls[1].arguments, "{}");
}

TEST(MistralToolCalls, NamedCallsOfTheV11Templates) {
  // As Mistral-Small-3.2 / Devstral write them.
  ToolDelta d = parse_every_split(
      kF,
      "I'll check both.[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}[TOOL_CALLS]get_time"
      "[ARGS]{\"tz\": \"Europe/Paris\"}");
  EXPECT_EQ(d.content, "I'll check both.");
  ASSERT_EQ(d.calls.size(), 2u);
  EXPECT_EQ(d.calls[0].name, "get_weather");
  EXPECT_EQ(d.calls[0].arguments, R"({"city":"Paris"})");
  EXPECT_EQ(d.calls[1].name, "get_time");
  EXPECT_EQ(d.calls[1].arguments, R"({"tz":"Europe/Paris"})");
  // With the call id between name and arguments.
  d = parse_every_split(kF, "[TOOL_CALLS]get_weather[CALL_ID]a1b2c3d4e[ARGS]{\"city\": \"Rome\"}");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].name, "get_weather");
  EXPECT_EQ(d.calls[0].id, "a1b2c3d4e");
  EXPECT_EQ(d.calls[0].arguments, R"({"city":"Rome"})");
}

TEST(MistralToolCalls, MalformedCallIsContent) {
  for (const std::string text : {
           "x [TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"q\": }}]",
           "[TOOL_CALLS][{\"arguments\": {}}]",  // no name
           "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {}}] and some words",
           "[TOOL_CALLS]I would call a tool here.",
           "[TOOL_CALLS]f[ARGS]not json",
           "[TOOL_CALLS]f[ARGS]{}[TOOL_CALLS]g[ARGS]{broken",
       }) {
    const ToolDelta d = parse_every_split(kF, text);
    EXPECT_TRUE(d.calls.empty()) << text;
    EXPECT_EQ(d.content, text);
  }
}

TEST(MistralToolCalls, TruncatedReply) {
  for (const std::string text : {
           "Sure.[TOOL_CALLS][{\"name\": \"get_weather\", \"argum",
           "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Par",
           "[TOOL_CALLS]get_weath",
       }) {
    const ToolDelta d = parse_every_split(kF, text);
    EXPECT_TRUE(d.calls.empty()) << text;
    EXPECT_EQ(d.content, text);
  }
}

TEST(MistralToolCalls, PlainTextAndPartialMarkerLookalikes) {
  const std::string text = "Arrays like [1, 2], [TOOL or [TOOL_CALL and [ARGS] stay text.";
  const ToolDelta d = parse_every_split(kF, text);
  EXPECT_TRUE(d.calls.empty());
  EXPECT_EQ(d.content, text);
  EXPECT_EQ(parse_every_split(kF, "ends with [TOOL_CALLS").content, "ends with [TOOL_CALLS");
}

TEST(MistralToolCalls, ContentStreamsBeforeTheCalls) {
  auto parser = make_tool_call_parser(kF);
  EXPECT_EQ(parser->push("Checking [TOOL").content, "Checking ");
  EXPECT_EQ(parser->push("_CALLS]f[ARGS]{}").content, "");
  const ToolDelta end = parser->finish();
  ASSERT_EQ(end.calls.size(), 1u);
  EXPECT_EQ(end.calls[0].name, "f");
}

}  // namespace
}  // namespace hearth::chat
