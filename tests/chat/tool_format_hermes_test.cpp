#include <gtest/gtest.h>

#include "chat/tool_call_testing.h"

namespace hearth::chat {
namespace {

using testing::parse_every_split;
using testing::parse_whole;

constexpr ToolFormat kF = ToolFormat::Hermes;

TEST(HermesToolCalls, OneCallAfterText) {
  // As Qwen2.5-Instruct writes it.
  const ToolDelta d = parse_every_split(
      kF,
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Paris\", \"unit\": \"c\"}}\n</tool_call>");
  EXPECT_EQ(d.content, "Let me check.\n");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].name, "get_weather");
  // As written (the template writes a string back verbatim: the history repeats the reply).
  EXPECT_EQ(d.calls[0].arguments, R"({"city": "Paris", "unit": "c"})");
  EXPECT_EQ(d.calls[0].id, "");
}

TEST(HermesToolCalls, ParallelCallsAndTrailingText) {
  const ToolDelta d = parse_every_split(
      kF,
      "<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": "
      "\"b\", \"arguments\": {\"x\": [1, 2]}}\n</tool_call>\n\nDone.");
  ASSERT_EQ(d.calls.size(), 2u);
  EXPECT_EQ(d.calls[0].name, "a");
  EXPECT_EQ(d.calls[0].arguments, "{}");
  EXPECT_EQ(d.calls[1].name, "b");
  EXPECT_EQ(d.calls[1].arguments, R"({"x": [1, 2]})");
  EXPECT_EQ(d.content, "Done.");
}

TEST(HermesToolCalls, ArgumentsKeepTheirTextAndOrder) {
  const ToolDelta d = parse_every_split(
      kF,
      "<tool_call>\n{\"arguments\": {\"b\": \"}\\\"\", \"a\": {\"c\": [1, {}]}},\n \"name\": "
      "\"f\"}\n</tool_call>");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].name, "f");
  EXPECT_EQ(d.calls[0].arguments, R"({"b": "}\"", "a": {"c": [1, {}]}})");
}

TEST(HermesToolCalls, ArgumentsAsAString) {
  const ToolDelta d = parse_every_split(
      kF, "<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"q\\\": 1}\"}</tool_call>");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].arguments, R"({"q":1})");
}

// A model (or a client's history) writing arguments nested 100,000 deep: past the JSON depth
// limit (util/json_depth.h) the call is not parsed, so nothing recurses over it; it stays text.
TEST(HermesToolCalls, ArgumentsNestedPastTheDepthLimitAreText) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const std::string reply =
      "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": " + deep + "}}\n</tool_call>";
  const ToolDelta d = parse_whole(kF, reply);
  EXPECT_TRUE(d.calls.empty());
  EXPECT_EQ(d.content, reply);
  // Within the limit, the same shape is a call.
  const std::string ok = std::string(50, '[') + std::string(50, ']');
  const ToolDelta fine = parse_whole(
      kF, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": " + ok + "}}\n</tool_call>");
  ASSERT_EQ(fine.calls.size(), 1u);
}

TEST(HermesToolCalls, MalformedCallIsContent) {
  const std::string bad = "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"q\": }\n</tool_call>";
  ToolDelta d = parse_every_split(kF, "x " + bad);
  EXPECT_TRUE(d.calls.empty());
  EXPECT_EQ(d.content, "x " + bad);
  d = parse_every_split(kF, "<tool_call>{\"arguments\": {}}</tool_call>");  // no name
  EXPECT_TRUE(d.calls.empty());
  EXPECT_EQ(d.content, "<tool_call>{\"arguments\": {}}</tool_call>");
}

TEST(HermesToolCalls, UnclosedCallAtTheEnd) {
  // A reply cut off (max_tokens) inside a call: a complete object is still a call...
  ToolDelta d = parse_every_split(kF, "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n");
  ASSERT_EQ(d.calls.size(), 1u);
  // ... an incomplete one is content.
  d = parse_every_split(kF, "<tool_call>\n{\"name\": \"f\", \"argu");
  EXPECT_TRUE(d.calls.empty());
  EXPECT_EQ(d.content, "<tool_call>\n{\"name\": \"f\", \"argu");
}

TEST(HermesToolCalls, PlainTextAndPartialOpenerLookalikes) {
  const ToolDelta d = parse_every_split(kF, "a <tool or <tool_cal and <b>");
  EXPECT_TRUE(d.calls.empty());
  EXPECT_EQ(d.content, "a <tool or <tool_cal and <b>");
  EXPECT_EQ(parse_every_split(kF, "ends with <tool_c").content, "ends with <tool_c");
}

}  // namespace
}  // namespace hearth::chat
