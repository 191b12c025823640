// Test helpers for the tool-call parsers: a reply fed whole, split at every byte, and byte by
// byte must give the same content, reasoning and calls.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "chat/tool_calls.h"

namespace hearth::chat::testing {

inline ToolDelta parse_pieces(ToolFormat format, const std::vector<std::string_view>& pieces,
                              const nlohmann::json& tools = nullptr) {
  auto parser = make_tool_call_parser(format, tools);
  ToolDelta all;
  for (std::string_view p : pieces) all.append(parser->push(p));
  all.append(parser->finish());
  return all;
}

inline ToolDelta parse_whole(ToolFormat format, std::string_view text,
                             const nlohmann::json& tools = nullptr) {
  return parse_pieces(format, {text}, tools);
}

inline void expect_same(const ToolDelta& a, const ToolDelta& b, const std::string& how) {
  EXPECT_EQ(a.content, b.content) << how;
  EXPECT_EQ(a.reasoning, b.reasoning) << how;
  ASSERT_EQ(a.calls.size(), b.calls.size()) << how;
  for (size_t i = 0; i < a.calls.size(); ++i) {
    EXPECT_EQ(a.calls[i].name, b.calls[i].name) << how << " call " << i;
    EXPECT_EQ(a.calls[i].arguments, b.calls[i].arguments) << how << " call " << i;
    EXPECT_EQ(a.calls[i].id, b.calls[i].id) << how << " call " << i;
  }
}

// The whole-text result, after checking that every two-piece split and the byte-by-byte feed
// give the same.
inline ToolDelta parse_every_split(ToolFormat format, std::string_view text,
                                   const nlohmann::json& tools = nullptr) {
  const ToolDelta whole = parse_whole(format, text, tools);
  for (size_t at = 0; at <= text.size(); ++at)
    expect_same(parse_pieces(format, {text.substr(0, at), text.substr(at)}, tools), whole,
                "split at " + std::to_string(at));
  std::vector<std::string_view> bytes;
  for (size_t i = 0; i < text.size(); ++i) bytes.push_back(text.substr(i, 1));
  expect_same(parse_pieces(format, bytes, tools), whole, "byte by byte");
  return whole;
}

}  // namespace hearth::chat::testing
