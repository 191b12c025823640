#include <gtest/gtest.h>

#include "chat/tool_call_testing.h"

namespace hearth::chat {
namespace {

using testing::parse_every_split;

constexpr ToolFormat kF = ToolFormat::Qwen3Coder;

// The request's tools, as the OpenAI API carries them.
const nlohmann::json kTools = nlohmann::json::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer"},
                   "units": {"type": ["string", "null"]}}}}},
  {"type": "function", "function": {"name": "configure", "parameters": {"type": "object",
    "properties": {"verbose": {"type": "boolean"}, "tags": {"type": "array"},
                   "limits": {"type": "object"}, "ratio": {"type": "number"},
                   "code": {"type": "string"}, "anything": {}}}}}
])");

// As Qwen3-Coder-30B-A3B-Instruct writes a call.
constexpr std::string_view kWeatherCall =
    "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
    "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>";

TEST(Qwen3CoderToolCalls, OneCallAfterTextTypedBySchema) {
  const ToolDelta d =
      parse_every_split(kF, "I'll look that up.\n" + std::string(kWeatherCall), kTools);
  EXPECT_EQ(d.content, "I'll look that up.\n");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].name, "get_weather");
  EXPECT_EQ(d.calls[0].arguments, R"({"city":"Paris","days":3})");
  EXPECT_EQ(d.calls[0].id, "");
}

TEST(Qwen3CoderToolCalls, WithoutSchemasValuesAreText) {
  const ToolDelta d = parse_every_split(kF, kWeatherCall);
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].arguments, R"({"city":"Paris","days":"3"})");
}

TEST(Qwen3CoderToolCalls, ArgumentsKeepTheParametersOrder) {
  const ToolDelta d = parse_every_split(
      kF,
      "<tool_call>\n<function=get_weather>\n<parameter=units>\ncelsius\n</parameter>\n"
      "<parameter=days>\n2\n</parameter>\n<parameter=city>\nOslo\n</parameter>\n</function>\n"
      "</tool_call>",
      kTools);
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].arguments, R"({"units":"celsius","days":2,"city":"Oslo"})");
}

TEST(Qwen3CoderToolCalls, ValueTypes) {
  const ToolDelta d = parse_every_split(
      kF,
      "<tool_call>\n<function=configure>\n<parameter=verbose>\ntrue\n</parameter>\n"
      "<parameter=tags>\n[\"a\", \"b\"]\n</parameter>\n"
      "<parameter=limits>\n{\"max\": 5}\n</parameter>\n"
      "<parameter=ratio>\nabout half\n</parameter>\n"
      "<parameter=code>\ndef f():\n    return 1\n\n</parameter>\n"
      "<parameter=anything>\n42\n</parameter>\n"
      "<parameter=unknown>\n7\n</parameter>\n</function>\n</tool_call>",
      kTools);
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].name, "configure");
  // A number that does not parse stays text; a "string" value keeps its inner newlines, and
  // only one newline goes from each end; a schema without a type reads JSON; an unknown
  // parameter is text.
  EXPECT_EQ(d.calls[0].arguments,
            R"({"verbose":true,"tags":["a","b"],"limits":{"max":5},"ratio":"about half",)"
            R"("code":"def f():\n    return 1\n","anything":42,"unknown":"7"})");
}

TEST(Qwen3CoderToolCalls, BytesThatAreNotUtf8AreReplaced) {
  // A raw value is the model's bytes as they came; a broken one must not throw.
  const ToolDelta d = parse_every_split(
      kF,
      "<tool_call>\n<function=f>\n<parameter=a>\nx\xff\n</parameter>\n</function>\n</tool_call>");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].arguments, "{\"a\":\"x\xEF\xBF\xBD\"}");
}

TEST(Qwen3CoderToolCalls, ParallelCallsAndTrailingText) {
  const ToolDelta d = parse_every_split(
      kF,
      std::string(kWeatherCall) +
          "\n<tool_call>\n<function=configure>\n</function>\n</tool_call>\n\nStarted both.",
      kTools);
  ASSERT_EQ(d.calls.size(), 2u);
  EXPECT_EQ(d.calls[0].name, "get_weather");
  EXPECT_EQ(d.calls[0].arguments, R"({"city":"Paris","days":3})");
  EXPECT_EQ(d.calls[1].name, "configure");
  EXPECT_EQ(d.calls[1].arguments, "{}");
  EXPECT_EQ(d.content, "Started both.");
}

TEST(Qwen3CoderToolCalls, MissingParameterCloserIsTolerated) {
  // The model sometimes leaves out </parameter>: the next tag ends the value.
  const ToolDelta d = parse_every_split(
      kF,
      "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n<parameter=days>\n3\n"
      "</function>\n</tool_call>",
      kTools);
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].arguments, R"({"city":"Paris","days":3})");
}

TEST(Qwen3CoderToolCalls, MalformedCallIsContent) {
  for (const std::string bad : {
           // Hermes' JSON body is not this format's.
           "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>",
           // No function name.
           "<tool_call>\n<function=>\n</function>\n</tool_call>",
           // Text between the parameters.
           "<tool_call>\n<function=f>\nhello\n<parameter=a>\n1\n</parameter>\n</function>\n"
           "</tool_call>",
           // The function is never closed.
           "<tool_call>\n<function=f>\n<parameter=a>\n1\n</parameter>\n</tool_call>",
       }) {
    const ToolDelta d = parse_every_split(kF, "Before " + bad + " after", kTools);
    EXPECT_TRUE(d.calls.empty()) << bad;
    EXPECT_EQ(d.content, "Before " + bad + " after");
  }
}

TEST(Qwen3CoderToolCalls, TruncatedReply) {
  // Cut off after the function closed: still a call.
  ToolDelta d = parse_every_split(
      kF,
      "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n",
      kTools);
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].arguments, R"({"city":"Paris"})");
  // Cut off inside a value: content.
  const std::string cut = "Checking.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nPa";
  d = parse_every_split(kF, cut, kTools);
  EXPECT_TRUE(d.calls.empty());
  EXPECT_EQ(d.content, cut);
}

TEST(Qwen3CoderToolCalls, PlainTextAndPartialOpenerLookalikes) {
  const std::string text = "Use <function=x> or <parameter=y> in a <tool or <tool_cal tag.";
  ToolDelta d = parse_every_split(kF, text, kTools);
  EXPECT_TRUE(d.calls.empty());
  EXPECT_EQ(d.content, text);
  EXPECT_EQ(parse_every_split(kF, "ends with <tool_call", kTools).content, "ends with <tool_call");
}

}  // namespace
}  // namespace hearth::chat
