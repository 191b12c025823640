#include <gtest/gtest.h>

#include "chat/tool_call_testing.h"

namespace hearth::chat {
namespace {

using testing::parse_every_split;

constexpr ToolFormat kF = ToolFormat::DeepSeek;

// The markers, U+FF5C and U+2581 in them.
const std::string kCallsBegin = "<｜tool▁calls▁begin｜>";
const std::string kCallsEnd = "<｜tool▁calls▁end｜>";
const std::string kCallBegin = "<｜tool▁call▁begin｜>";
const std::string kCallEnd = "<｜tool▁call▁end｜>";
const std::string kSep = "<｜tool▁sep｜>";

// A call as DeepSeek R1 / V3 write it.
std::string fenced_call(const std::string& name, const std::string& args) {
  return kCallBegin + "function" + kSep + name + "\n```json\n" + args + "\n```" + kCallEnd;
}

TEST(DeepSeekToolCalls, OneCallAfterReasoningEndAndText) {
  // The reasoning was split off before this parser; what is left of it is plain content.
  const ToolDelta d = parse_every_split(
      kF, "</think>\n\nLet me check the weather." + kCallsBegin +
              fenced_call("get_weather", R"({"city": "Paris", "unit": "c"})") + kCallsEnd);
  EXPECT_EQ(d.content, "</think>\n\nLet me check the weather.");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].name, "get_weather");
  EXPECT_EQ(d.calls[0].arguments, R"({"city":"Paris","unit":"c"})");
  EXPECT_EQ(d.calls[0].id, "");
}

TEST(DeepSeekToolCalls, ParallelCallsAndTrailingText) {
  const ToolDelta d =
      parse_every_split(kF, kCallsBegin + fenced_call("get_weather", R"({"city": "Paris"})") +
                                "\n" + fenced_call("get_time", "{}") + kCallsEnd + "\n\nDone.");
  ASSERT_EQ(d.calls.size(), 2u);
  EXPECT_EQ(d.calls[0].name, "get_weather");
  EXPECT_EQ(d.calls[0].arguments, R"({"city":"Paris"})");
  EXPECT_EQ(d.calls[1].name, "get_time");
  EXPECT_EQ(d.calls[1].arguments, "{}");
  EXPECT_EQ(d.content, "Done.");
}

TEST(DeepSeekToolCalls, V31Calls) {
  const ToolDelta d =
      parse_every_split(kF, "Checking." + kCallsBegin + kCallBegin + "get_weather" + kSep +
                                R"({"city": "Paris"})" + kCallEnd + kCallBegin + "get_time" + kSep +
                                R"({"tz": "UTC"})" + kCallEnd + kCallsEnd);
  EXPECT_EQ(d.content, "Checking.");
  ASSERT_EQ(d.calls.size(), 2u);
  EXPECT_EQ(d.calls[0].name, "get_weather");
  EXPECT_EQ(d.calls[0].arguments, R"({"city":"Paris"})");
  EXPECT_EQ(d.calls[1].name, "get_time");
  EXPECT_EQ(d.calls[1].arguments, R"({"tz":"UTC"})");
}

TEST(DeepSeekToolCalls, MalformedCallIsContent) {
  for (const std::string& bad : {
           kCallsBegin + fenced_call("f", R"({"q": })") + kCallsEnd,
           kCallsBegin + kCallBegin + "function get_weather {}" + kCallEnd + kCallsEnd,
           kCallsBegin + kCallBegin + "tool" + kSep + "f\n```json\n{}\n```" + kCallEnd + kCallsEnd,
           kCallsBegin + "I meant to call a tool." + kCallsEnd,
           kCallsBegin + fenced_call("a", "{}") + fenced_call("b", "[1]") + kCallsEnd,
       }) {
    const ToolDelta d = parse_every_split(kF, "x " + bad);
    EXPECT_TRUE(d.calls.empty()) << bad;
    EXPECT_EQ(d.content, "x " + bad);
  }
}

TEST(DeepSeekToolCalls, TruncatedReply) {
  // Cut off before the block's end: the calls written whole are calls...
  ToolDelta d = parse_every_split(kF, kCallsBegin + fenced_call("get_weather", "{}") + "\n");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].name, "get_weather");
  // ... a call cut off makes it all content.
  const std::string cut =
      kCallsBegin + fenced_call("a", "{}") + kCallBegin + "function" + kSep + "b\n```json\n{\"x";
  d = parse_every_split(kF, cut);
  EXPECT_TRUE(d.calls.empty());
  EXPECT_EQ(d.content, cut);
}

TEST(DeepSeekToolCalls, PlainTextAndPartialMarkerLookalikes) {
  const std::string text =
      "Full-width <｜bars｜>, <｜tool and <｜tool▁call▁begin｜> alone stay text.";
  const ToolDelta d = parse_every_split(kF, text);
  EXPECT_TRUE(d.calls.empty());
  EXPECT_EQ(d.content, text);
  EXPECT_EQ(parse_every_split(kF, "ends with <｜tool▁calls▁").content, "ends with <｜tool▁calls▁");
}

}  // namespace
}  // namespace hearth::chat
