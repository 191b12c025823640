// Command R7B: the calls are one JSON array between action markers, after any content:
//   <|START_ACTION|>[
//       {"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": "Paris"}}
//   ]<|END_ACTION|>
// A plain answer comes as <|START_RESPONSE|>The weather is sunny.<|END_RESPONSE|>: those two
// markers are dropped and the text between them is content. (The thinking block before either
// is split off before this parser.)
#include <algorithm>
#include <array>

#include "chat/tool_parsers.h"

namespace hearth::chat::tools {
namespace {

using nlohmann::json;

constexpr std::array<std::string_view, 2> kResponseMarkers = {"<|START_RESPONSE|>",
                                                              "<|END_RESPONSE|>"};

std::optional<std::vector<ToolCall>> parse_action(std::string_view body) {
  auto v = parse_json(body);
  if (!v) return std::nullopt;
  const json list = v->is_array() ? *v : json::array({*v});
  std::vector<ToolCall> calls;
  for (const json& obj : list) {
    auto call = call_from_object(obj, "tool_name", "parameters");
    if (!call) return std::nullopt;
    if (auto id = obj.find("tool_call_id"); id != obj.end())
      call->id = id->is_string() ? id->get<std::string>() : id->dump();
    calls.push_back(std::move(*call));
  }
  return calls;
}

class CommandRParser : public ToolCallParser {
 public:
  ToolDelta push(std::string_view text) override {
    pending_ += text;
    return actions_.push(take_without_response_markers(false));
  }

  ToolDelta finish() override {
    ToolDelta out = actions_.push(take_without_response_markers(true));
    out.append(actions_.finish());
    return out;
  }

 private:
  // The pending text with the response markers taken out, less (unless `final`) a tail that
  // may be the start of one.
  std::string take_without_response_markers(bool final) {
    std::string out;
    size_t pos = 0;
    while (true) {
      size_t at = std::string::npos, size = 0;
      for (std::string_view marker : kResponseMarkers)
        if (const size_t found = pending_.find(marker, pos); found < at) {
          at = found;
          size = marker.size();
        }
      if (at == std::string::npos) break;
      out.append(pending_, pos, at - pos);
      pos = at + size;
    }
    size_t keep = 0;
    if (!final)
      for (std::string_view marker : kResponseMarkers)
        keep = std::max(keep, partial_suffix(std::string_view(pending_).substr(pos), marker));
    out.append(pending_, pos, pending_.size() - pos - keep);
    pending_.erase(0, pending_.size() - keep);
    return out;
  }

  std::string pending_;
  DelimitedCallParser actions_{"<|START_ACTION|>", "<|END_ACTION|>", parse_action};
};

}  // namespace

std::unique_ptr<ToolCallParser> make_command_r_parser() {
  return std::make_unique<CommandRParser>();
}

}  // namespace hearth::chat::tools
