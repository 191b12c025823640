// The reply stream shared by the server's chat replies and `hearth chat`: token texts or whole
// text in, content and reasoning out, the same whichever way the reply is fed.
#include "chat/reply_stream.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hearth::chat {
namespace {

// A piece of the reply as the engine's events give it: a token's text, or the end.
struct Piece {
  std::string text;
  bool last = false;
};
Piece token(std::string text) {
  return {std::move(text)};
}
Piece finished(std::string text) {
  return {std::move(text), true};
}

TEST(ReplyStream, WithoutSplitterAllIsContentAsItComes) {
  ReplyStream r;
  EXPECT_FALSE(r.splits());
  EXPECT_EQ(r.push("<think>a").content, "<think>a");
  EXPECT_TRUE(r.finish().empty());
  EXPECT_EQ(r.content(), "<think>a");
  EXPECT_EQ(r.reasoning(), "");
  EXPECT_EQ(ReplyStream().whole("x").content, "x");
}

TEST(ReplyStream, EventsSplitReasoningAndFinishedReleasesTheRest) {
  ReplyStream r{ReasoningSplitter()};
  EXPECT_TRUE(r.splits());
  std::string reasoning, content;
  for (const Piece& e :
       {token("<thi"), token("nk>why"), token(" </th"), token("ink>\n\nso"), finished("!")}) {
    const ReasoningDelta d = r.push(e.text, e.last);
    reasoning += d.reasoning;
    content += d.content;
  }
  EXPECT_EQ(reasoning, "why");
  EXPECT_EQ(content, "so!");
  EXPECT_EQ(r.reasoning(), "why");
  EXPECT_EQ(r.content(), "so!");
}

TEST(ReplyStream, HeldBackMarkerStartReleasedAtFinished) {
  ReplyStream r{ReasoningSplitter()};
  EXPECT_TRUE(r.push("<thi", false).empty());  // maybe the open marker
  const ReasoningDelta d = r.push("", true);
  EXPECT_EQ(d.content, "<thi");
  EXPECT_EQ(r.content(), "<thi");
}

TEST(ReplyStream, WholeEqualsStreamed) {
  const std::string text = "<think>\nplan\n</think>\n\nanswer";
  ReplyStream streamed{ReasoningSplitter()};
  for (char c : text) streamed.push(std::string(1, c));
  streamed.finish();
  ReplyStream whole{ReasoningSplitter()};
  const ReasoningDelta d = whole.whole(text);
  EXPECT_EQ(d.reasoning, "plan");
  EXPECT_EQ(d.content, "answer");
  EXPECT_EQ(streamed.reasoning(), d.reasoning);
  EXPECT_EQ(streamed.content(), d.content);
}

TEST(ReplyStream, PromptThatOpenedTheBlock) {
  ReplyStream r{ReasoningSplitter({}, /*starts_in_reasoning=*/true)};
  const ReasoningDelta d = r.whole("think</think>done");
  EXPECT_EQ(d.reasoning, "think");
  EXPECT_EQ(d.content, "done");
}

}  // namespace
}  // namespace hearth::chat
