#include "server/tool_call_reader.h"

#include <random>
#include <string>

namespace hearth::server {

using nlohmann::json;

namespace {

// Random letters and digits: ids must not repeat across turns or restarts, since clients match
// tool results to calls by id within a conversation.
std::string random_id(size_t n) {
  static constexpr char kChars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_int_distribution<size_t> pick(0, sizeof(kChars) - 2);
  std::string out;
  for (size_t i = 0; i < n; ++i) out += kChars[pick(rng)];
  return out;
}

}  // namespace

ToolCallReader::ToolCallReader(chat::ToolFormat format, const json& tools)
    : format_(format), parser_(chat::make_tool_call_parser(format, tools)) {}

void ToolCallReader::give_ids(chat::ToolDelta& d) {
  for (chat::ToolCall& c : d.calls)
    if (c.id.empty())  // Mistral's templates accept only 9 letters and digits
      c.id = format_ == chat::ToolFormat::Mistral ? random_id(9) : "call_" + random_id(24);
}

chat::ToolDelta ToolCallReader::push(std::string_view content) {
  chat::ToolDelta d = parser_->push(content);
  give_ids(d);
  return d;
}

chat::ToolDelta ToolCallReader::finish() {
  chat::ToolDelta d = parser_->finish();
  give_ids(d);
  return d;
}

json ToolCallReader::message_entries(const std::vector<chat::ToolCall>& calls) {
  json out = json::array();
  for (const chat::ToolCall& c : calls) {
    ++next_index_;
    out.push_back({{"id", c.id},
                   {"type", "function"},
                   {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
  }
  return out;
}

std::vector<json> ToolCallReader::stream_deltas(const std::vector<chat::ToolCall>& calls) {
  std::vector<json> out;
  for (const chat::ToolCall& c : calls) {
    const int index = next_index_++;
    out.push_back(json::array({{{"index", index},
                                {"id", c.id},
                                {"type", "function"},
                                {"function", {{"name", c.name}, {"arguments", ""}}}}}));
    out.push_back(json::array({{{"index", index}, {"function", {{"arguments", c.arguments}}}}}));
  }
  return out;
}

}  // namespace hearth::server
