// The reply stream shared by the server's chat replies and `hearth chat`: engine events or text
// in, content and reasoning out, the same whichever way the reply is fed.
#include "chat/reply_stream.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hearth::chat {
namespace {

EngineEvent token(std::string text) {
  EngineEvent e;
  e.token = 1;
  e.text = std::move(text);
  return e;
}

EngineEvent finished(std::string text) {
  EngineEvent e;
  e.kind = EngineEvent::Kind::Finished;
  e.text = std::move(text);
  return e;
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
  for (const EngineEvent& e :
       {token("<thi"), token("nk>why"), token(" </th"), token("ink>\n\nso"), finished("!")}) {
    const ReasoningDelta d = r.push(e);
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
  EXPECT_TRUE(r.push(token("<thi")).empty());  // maybe the open marker
  const ReasoningDelta d = r.push(finished(""));
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
