#include <gtest/gtest.h>

#include "chat/reasoning.h"

namespace hearth::chat {
namespace {

struct Split {
  std::string reasoning, content;
};

// Feeds `text` in pieces of `chunk` bytes and checks no delta ever holds part of a marker.
Split run(ReasoningSplitter s, const std::string& text, size_t chunk) {
  Split out;
  auto take = [&](const ReasoningDelta& d) {
    for (const std::string* t : {&d.reasoning, &d.content}) {
      EXPECT_EQ(t->find("</think"), std::string::npos) << *t;
      EXPECT_EQ(t->find("<think"), std::string::npos) << *t;
    }
    out.reasoning += d.reasoning;
    out.content += d.content;
  };
  for (size_t i = 0; i < text.size(); i += chunk) take(s.push(text.substr(i, chunk)));
  take(s.finish());
  return out;
}

TEST(ReasoningSplitter, SplitsThinkBlockAtAnyChunking) {
  const std::string text = "<think>\nLet me add: 2+2=4.\n</think>\n\nThe answer is 4.";
  for (size_t chunk = 1; chunk <= text.size(); ++chunk) {
    SCOPED_TRACE(chunk);
    Split s = run(ReasoningSplitter(), text, chunk);
    EXPECT_EQ(s.reasoning, "Let me add: 2+2=4.");
    EXPECT_EQ(s.content, "The answer is 4.");
  }
}

TEST(ReasoningSplitter, PromptThatOpenedTheBlock) {
  for (size_t chunk = 1; chunk < 8; ++chunk) {
    Split s = run(ReasoningSplitter({}, true), "hmm <thin\n</think>ok", chunk);
    EXPECT_EQ(s.reasoning, "hmm <thin");
    EXPECT_EQ(s.content, "ok");
  }
}

TEST(ReasoningSplitter, PlainOutputPassesThroughUnchanged) {
  for (size_t chunk = 1; chunk < 6; ++chunk) {
    Split s = run(ReasoningSplitter(), "  Hello <think> is literal here </think>", chunk);
    EXPECT_EQ(s.reasoning, "");
    EXPECT_EQ(s.content, "  Hello <think> is literal here </think>");
    Split t = run(ReasoningSplitter(), "<thi", chunk);  // a partial marker at the end
    EXPECT_EQ(t.content, "<thi");
  }
}

TEST(ReasoningSplitter, UnclosedBlockStaysReasoningAndCustomMarkers) {
  Split s = run(ReasoningSplitter(), "<think>still thinking", 3);
  EXPECT_EQ(s.reasoning, "still thinking");
  EXPECT_EQ(s.content, "");
  ReasoningSplitter custom({"[THINK]", "[/THINK]"});
  ReasoningDelta d = custom.push("[THINK]a[/THI");
  EXPECT_EQ(d.reasoning, "a");
  d = custom.push("NK]b");
  EXPECT_EQ(d.content, "b");
}

TEST(ReasoningMarkers, DetectedFromTemplateAndPrompt) {
  EXPECT_FALSE(detect_reasoning_markers("{{ messages }}").has_value());
  auto m = detect_reasoning_markers("{{ '<think>\\n\\n</think>' }}");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->close, "</think>");
  EXPECT_TRUE(prompt_opens_reasoning("<|Assistant|><think>\n", *m));
  EXPECT_FALSE(prompt_opens_reasoning("<|Assistant|><think>\n</think>", *m));
}

}  // namespace
}  // namespace hearth::chat
