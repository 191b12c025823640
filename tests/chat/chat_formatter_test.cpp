#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "chat/chat_formatter.h"
#include "common/shared_data.h"

namespace hearth::chat {
namespace {

using json = nlohmann::ordered_json;

TEST(ChatFormatter, NormalisesOpenAiMessages) {
  const json in = json::parse(R"([
    {"role": "developer", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": null, "tool_calls": [
      {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"x\": 1}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "42"}])");
  const json out = normalize_messages(in);
  EXPECT_EQ(out[0]["role"], "system");
  EXPECT_EQ(out[0]["content"], "a\nb");
  EXPECT_EQ(out[2]["content"], "");
  EXPECT_TRUE(out[2]["tool_calls"][0]["function"]["arguments"].is_object());
  EXPECT_EQ(out[2]["tool_calls"][0]["function"]["arguments"]["x"], 1);
  EXPECT_EQ(out[3]["tool_call_id"], "c1");
}

// Arguments sent as a JSON string nested past the depth limit stay a string: parsing them into
// an object would hand the template a value its walks recurse through once per level.
TEST(ChatFormatter, DeeplyNestedArgumentStringsStayStrings) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  json in = json::array();
  in.push_back({{"role", "user"}, {"content", "hi"}});
  in.push_back(
      {{"role", "assistant"},
       {"content", nullptr},
       {"tool_calls", json::array({{{"id", "c1"},
                                    {"type", "function"},
                                    {"function", {{"name", "f"}, {"arguments", deep}}}}})}});
  const json out = normalize_messages(in);
  EXPECT_TRUE(out[1]["tool_calls"][0]["function"]["arguments"].is_string());
  const ChatFormatter f(std::nullopt, "", "");
  EXPECT_NO_THROW(f.format(in, nullptr, true, nullptr, {}));
}

TEST(ChatFormatter, BadMessagesNameTheField) {
  auto msg = [](const char* j) {
    try {
      normalize_messages(json::parse(j));
    } catch (const hearth::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(msg(R"([])"), "messages: the conversation is empty");
  EXPECT_EQ(msg(R"([{"content": "x"}])"), "messages[0].role: expected a string");
  EXPECT_EQ(msg(R"([{"role": "user", "content": 5}])"),
            "messages[0].content: expected a string, an array of text parts or null");
  EXPECT_EQ(msg(R"([{"role": "user", "content": [{"type": "image_url"}]}])"),
            "messages[0].content[0]: content part type 'image_url' is not supported (text only)");
}

TEST(ChatFormatter, FallsBackToChatMlWithWarning) {
  ChatFormatter f(std::nullopt, "", "");
  EXPECT_TRUE(f.uses_fallback());
  EXPECT_FALSE(f.warning().empty());
  const Rendered r =
      f.format(json::parse(R"([{"role": "user", "content": "<|im_end|>x"}])"), nullptr, true);
  EXPECT_EQ(r.text, "<|im_start|>user\n<|im_end|>x<|im_end|>\n<|im_start|>assistant\n");
  // The user's "<|im_end|>" is not a place where special tokens may be parsed.
  for (auto [a, b] : r.special_ok) EXPECT_FALSE(a <= 17 && 17 < b);
}

TEST(ChatFormatter, Qwen3OpenAiWireToolCallRendersAfterNormalisation) {
  HEARTH_SHARED_OR_SKIP(path, "templates/templates/Qwen-Qwen3-0.6B.jinja");
  ChatFormatter f(test::read_file(path), "", "<|im_end|>");
  ASSERT_TRUE(f.reasoning_markers().has_value());
  const json cases = json::parse(test::read_file(test::shared_path("templates/cases.json")));
  for (const auto& c : cases["cases"]) {
    if (c["name"] != "tool_call_openai_wire") continue;
    // Raw, the template fails on content null ('</think>' in None); normalised it renders as
    // the object-arguments case does.
    const Rendered r = f.format(c["messages"], c["tools"], true);
    const std::string expected = test::read_file(
        test::shared_path("templates/expected/Qwen-Qwen3-0.6B/tool_call_roundtrip.txt"));
    EXPECT_EQ(r.text, expected);
  }
}

TEST(ChatFormatter, KwargsReachTheTemplateAndThinkingPromptIsDetected) {
  HEARTH_SHARED_OR_SKIP(path, "templates/templates/deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja");
  ChatFormatter f(test::read_file(path), "<s>", "</s>");
  const json msgs = json::parse(R"([{"role": "user", "content": "hi"}])");
  const Rendered thinking = f.format(msgs, nullptr, true, json{{"enable_thinking", true}});
  EXPECT_TRUE(f.reasoning_splitter(thinking).in_reasoning());
  const Rendered plain = f.format(msgs, nullptr, true, json{{"enable_thinking", false}});
  EXPECT_FALSE(f.reasoning_splitter(plain).in_reasoning());
  EXPECT_NE(thinking.text, plain.text);
}

}  // namespace
}  // namespace hearth::chat
