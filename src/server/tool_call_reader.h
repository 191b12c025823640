// The tool calls in a chat reply, as OpenAI's API gives them: the reply's content goes through
// the model family's parser (chat/tool_calls.h), each call gets an id and an index, and becomes
// a message.tool_calls entry (answered whole) or the delta.tool_calls chunks OpenAI streams
// (the first with id, type and name and empty arguments, the next with the arguments), which
// the official clients' stream helpers assemble.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string_view>
#include <vector>

#include "chat/tool_calls.h"

namespace hearth::server {

class ToolCallReader {
 public:
  ToolCallReader(chat::ToolFormat format, const nlohmann::json& tools);

  // A piece of the reply's content, and its end: what is content, and the calls completed,
  // each with its id.
  chat::ToolDelta push(std::string_view content);
  chat::ToolDelta finish();

  // How many calls the reply has made so far.
  int calls() const { return next_index_; }

  // message.tool_calls entries for `calls` (the next indices in order).
  nlohmann::json message_entries(const std::vector<chat::ToolCall>& calls);
  // delta.tool_calls values, one chunk each, for `calls`.
  std::vector<nlohmann::json> stream_deltas(const std::vector<chat::ToolCall>& calls);

 private:
  void give_ids(chat::ToolDelta& d);

  chat::ToolFormat format_;
  std::unique_ptr<chat::ToolCallParser> parser_;
  int next_index_ = 0;
};

}  // namespace hearth::server
