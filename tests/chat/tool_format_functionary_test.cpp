#include <gtest/gtest.h>

#include "chat/tool_call_testing.h"

namespace hearth::chat {
namespace {

using testing::parse_every_split;

constexpr ToolFormat kF = ToolFormat::Functionary;

TEST(FunctionaryToolCalls, V32OneCallAfterText) {
  // As functionary-small-v3.2 writes it.
  const ToolDelta d =
      parse_every_split(kF, ">>>all\nLet me check.>>>get_weather\n{\"city\": \"Paris\"}");
  EXPECT_EQ(d.content, "Let me check.");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].name, "get_weather");
  EXPECT_EQ(d.calls[0].arguments, R"({"city":"Paris"})");
  EXPECT_EQ(d.calls[0].id, "");
}

TEST(FunctionaryToolCalls, V32ParallelCalls) {
  const ToolDelta d = parse_every_split(
      kF, ">>>get_weather\n{\"city\": \"Paris\"}>>>get_time\n{\"tz\": \"Europe/Paris\"}\n");
  EXPECT_EQ(d.content, "");
  ASSERT_EQ(d.calls.size(), 2u);
  EXPECT_EQ(d.calls[0].name, "get_weather");
  EXPECT_EQ(d.calls[0].arguments, R"({"city":"Paris"})");
  EXPECT_EQ(d.calls[1].name, "get_time");
  EXPECT_EQ(d.calls[1].arguments, R"({"tz":"Europe/Paris"})");
}

TEST(FunctionaryToolCalls, V32ContentOnlyAndPythonPrompts) {
  EXPECT_EQ(parse_every_split(kF, ">>>all\nIt is sunny in Paris.").content,
            "It is sunny in Paris.");
  // A Python prompt in the text is not a recipient: a space follows the ">>>".
  const ToolDelta d = parse_every_split(
      kF, ">>>all\nIn Python:\n>>> 1 + 1\n2\n>>>calculate\n{\"expression\": \"1 + 1\"}");
  EXPECT_EQ(d.content, "In Python:\n>>> 1 + 1\n2\n");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].name, "calculate");
  EXPECT_EQ(d.calls[0].arguments, R"({"expression":"1 + 1"})");
}

TEST(FunctionaryToolCalls, V31Calls) {
  // As functionary-medium-v3.1 writes them.
  const ToolDelta d =
      parse_every_split(kF,
                        "Let me check.<function=get_weather>{\"city\": \"Paris\"}</function>\n"
                        "<function=get_time>{}</function>\n\nDone.");
  EXPECT_EQ(d.content, "Let me check.Done.");
  ASSERT_EQ(d.calls.size(), 2u);
  EXPECT_EQ(d.calls[0].name, "get_weather");
  EXPECT_EQ(d.calls[0].arguments, R"({"city":"Paris"})");
  EXPECT_EQ(d.calls[1].name, "get_time");
  EXPECT_EQ(d.calls[1].arguments, "{}");
}

TEST(FunctionaryToolCalls, MalformedCallIsContent) {
  for (const std::string text : {
           ">>>get_weather\n{\"city\": }",
           ">>>python\nprint(1 + 1)",  // the code interpreter's raw code is no JSON call
           ">>>f\n[1, 2]",
           "<function=get_weather>{\"city\": }</function>",
           "<function=get_weather>Paris</function> and on",
       }) {
    const ToolDelta d = parse_every_split(kF, "x " + text);
    EXPECT_TRUE(d.calls.empty()) << text;
    EXPECT_EQ(d.content, "x " + text);
  }
  // A bad call does not hide the good one after it.
  const ToolDelta d = parse_every_split(kF, ">>>f\n{\"a\": }>>>g\n{\"b\": 2}");
  EXPECT_EQ(d.content, ">>>f\n{\"a\": }");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].name, "g");
  EXPECT_EQ(d.calls[0].arguments, R"({"b":2})");
}

TEST(FunctionaryToolCalls, TruncatedReply) {
  for (const std::string text : {
           ">>>all\nChecking.>>>get_weather\n{\"city\": \"Pa",
           ">>>get_wea",
           "<function=get_weather>{\"city\": \"Pa",
           "<function=get_wea",
       }) {
    const ToolDelta d = parse_every_split(kF, text);
    EXPECT_TRUE(d.calls.empty()) << text;
    EXPECT_EQ(d.content, text.starts_with(">>>all\n") ? text.substr(7) : text);
  }
  // Cut off before </function> with the arguments whole: a call.
  const ToolDelta d = parse_every_split(kF, "<function=get_weather>{\"city\": \"Paris\"}");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].arguments, R"({"city":"Paris"})");
}

TEST(FunctionaryToolCalls, PlainTextAndPartialMarkerLookalikes) {
  const std::string text =
      "a >> b >>>> c, <function x> or <function=bad name> and <functions>, >>>all by itself";
  const ToolDelta d = parse_every_split(kF, text);
  EXPECT_TRUE(d.calls.empty());
  EXPECT_EQ(d.content, text);
  EXPECT_EQ(parse_every_split(kF, "ends with >>").content, "ends with >>");
  EXPECT_EQ(parse_every_split(kF, "ends with <function").content, "ends with <function");
}

TEST(FunctionaryToolCalls, ContentStreams) {
  auto parser = make_tool_call_parser(kF);
  EXPECT_EQ(parser->push(">>>all\nIt is").content, "It is");
  EXPECT_EQ(parser->push(" sunny.>>").content, " sunny.");
  EXPECT_EQ(parser->push(">f\n{}").calls.size(), 1u);
  EXPECT_TRUE(parser->finish().empty());
}

}  // namespace
}  // namespace hearth::chat
