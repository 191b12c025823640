// The chat reply with tool calls, streamed and answered whole: reasoning, content and calls
// split the same way whatever the pieces, OpenAI's shapes (message.tool_calls with content
// null; delta.tool_calls: id, type and name first, then the arguments), finish_reason
// "tool_calls" only when the reply ended after calls.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/responder.h"

namespace hearth::server {
namespace {

using nlohmann::json;

const json kTools = json::parse(R"([{"type": "function", "function": {"name": "get_weather"}}])");

std::unique_ptr<Responder> responder() {
  ReplySettings s;
  s.meta = {"chatcmpl-1", 0, "m"};
  return make_chat_responder(s, chat::ReplyStream(chat::ReasoningSplitter()),
                             std::make_unique<ToolCallReader>(chat::ToolFormat::Hermes, kTools));
}

const std::string kReply =
    "<think>\nThe user wants weather.\n</think>\n\nChecking.\n<tool_call>\n{\"name\": "
    "\"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": "
    "\"get_weather\", \"arguments\": {\"city\": \"Rome\"}}\n</tool_call>";

// The streamed reply's chunks for `kReply` cut into pieces of `n` bytes.
std::vector<json> stream(size_t n, FinishReason reason = FinishReason::Stop) {
  auto r = responder();
  std::vector<json> out = r->start();
  for (size_t at = 0; at < kReply.size(); at += n)
    for (json& j : r->delta({kReply.substr(at, n), {}, {}})) out.push_back(std::move(j));
  Outcome o;
  o.reason = reason;
  for (json& j : r->finish(o)) out.push_back(std::move(j));
  return out;
}

// What a client assembles from the chunks, as the openai stream helper does.
json assemble(const std::vector<json>& chunks) {
  json msg = {{"content", ""}, {"reasoning_content", ""}, {"tool_calls", json::array()}};
  for (const json& c : chunks) {
    const json& d = c["choices"][0]["delta"];
    if (d.contains("content"))
      msg["content"] = msg["content"].get<std::string>() + d["content"].get<std::string>();
    if (d.contains("reasoning_content"))
      msg["reasoning_content"] =
          msg["reasoning_content"].get<std::string>() + d["reasoning_content"].get<std::string>();
    for (const json& t : d.value("tool_calls", json::array())) {
      const size_t i = t["index"].get<size_t>();
      if (i == msg["tool_calls"].size()) {
        EXPECT_TRUE(t.contains("id") && t.contains("type")) << "a call's first chunk: " << t;
        msg["tool_calls"].push_back(t);
      } else {
        if (i >= msg["tool_calls"].size()) {
          ADD_FAILURE() << "a call continued before it began: " << t;
          continue;
        }
        EXPECT_FALSE(t.contains("id")) << t;
        json& f = msg["tool_calls"][i]["function"];
        f["arguments"] =
            f["arguments"].get<std::string>() + t["function"]["arguments"].get<std::string>();
      }
    }
    msg["finish_reason"] = c["choices"][0]["finish_reason"];
  }
  return msg;
}

TEST(ToolReply, StreamedInAnyPiecesSaysWhatTheWholeReplySays) {
  auto r = responder();
  Outcome o;
  const json whole = r->whole({kReply, {}, {}}, o);
  const json& choice = whole["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls");
  const json& m = choice["message"];
  EXPECT_EQ(m["reasoning_content"], "The user wants weather.");
  EXPECT_EQ(m["content"], "Checking.\n");
  ASSERT_EQ(m["tool_calls"].size(), 2u);
  EXPECT_EQ(m["tool_calls"][1]["function"]["arguments"], R"({"city": "Rome"})");
  EXPECT_EQ(m["tool_calls"][0]["type"], "function");
  for (size_t n : {1u, 2u, 3u, 7u, 16u, 1000u}) {
    const json s = assemble(stream(n));
    EXPECT_EQ(s["reasoning_content"], m["reasoning_content"]) << n;
    EXPECT_EQ(s["content"], m["content"]) << n;
    EXPECT_EQ(s["finish_reason"], "tool_calls") << n;
    ASSERT_EQ(s["tool_calls"].size(), 2u) << n;
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(s["tool_calls"][i]["index"], i);
      EXPECT_EQ(s["tool_calls"][i]["function"]["name"], "get_weather");
      EXPECT_EQ(s["tool_calls"][i]["function"]["arguments"],
                m["tool_calls"][i]["function"]["arguments"]);
      EXPECT_EQ(s["tool_calls"][i]["id"].get<std::string>().rfind("call_", 0), 0u);
    }
  }
}

TEST(ToolReply, OnlyCallsMeanNullContentAndALengthEndStaysLength) {
  auto r = responder();
  Outcome o;
  const json whole = r->whole(
      {"<tool_call>{\"name\": \"get_weather\", \"arguments\": {}}</tool_call>", {}, {}}, o);
  EXPECT_TRUE(whole["choices"][0]["message"]["content"].is_null());
  EXPECT_EQ(stream(5, FinishReason::Length).back()["choices"][0]["finish_reason"], "length");
}

TEST(ToolReply, AReplyWithoutCallsIsPlainContent) {
  auto r = responder();
  Outcome o;
  const json whole = r->whole({"No tools needed: <tool_call is not a call.", {}, {}}, o);
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(whole["choices"][0]["message"]["content"],
            "No tools needed: <tool_call is not a call.");
  EXPECT_FALSE(whole["choices"][0]["message"].contains("tool_calls"));
}

}  // namespace
}  // namespace hearth::server
