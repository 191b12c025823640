#include <algorithm>

#include "chat/tool_parsers.h"
#include "util/json_depth.h"

namespace hearth::chat::tools {

using nlohmann::json;

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

std::optional<json> parse_json(std::string_view text) {
  if (!json_depth_ok(text)) return std::nullopt;  // util/json_depth.h: walks recurse per level
  json v = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (v.is_discarded()) return std::nullopt;
  return v;
}

size_t json_value_extent(std::string_view text) {
  size_t start = 0;
  while (start < text.size() && is_space(text[start])) ++start;
  if (start == text.size() || (text[start] != '{' && text[start] != '[')) return 0;
  // Nesting outside strings, byte by byte; whether the value parses is for the caller to check.
  size_t depth = 0;
  JsonBrackets brackets;
  for (size_t i = start; i < text.size(); ++i) {
    const int step = brackets.step(text[i]);
    if (step > 0) ++depth;
    if (step < 0 && --depth == 0) return i + 1;
  }
  return std::string_view::npos;
}

std::optional<std::pair<json, size_t>> parse_json_prefix(std::string_view text) {
  const size_t extent = json_value_extent(text);
  if (extent == 0 || extent == std::string_view::npos) return std::nullopt;
  auto v = parse_json(text.substr(0, extent));
  if (!v) return std::nullopt;
  return std::make_pair(std::move(*v), extent);
}

std::optional<std::string> arguments_text(const json& args) {
  if (args.is_object()) return args.dump();
  if (args.is_string()) {
    auto inner = parse_json(args.get<std::string>());
    if (inner && inner->is_object()) return inner->dump();
  }
  return std::nullopt;
}

std::optional<ToolCall> call_from_object(const json& obj, const char* name_key,
                                         const char* args_key) {
  if (!obj.is_object()) return std::nullopt;
  auto name = obj.find(name_key);
  if (name == obj.end() || !name->is_string() || name->get<std::string>().empty())
    return std::nullopt;
  ToolCall call{name->get<std::string>(), "{}", ""};
  if (auto args = obj.find(args_key); args != obj.end()) {
    auto text = arguments_text(*args);
    if (!text) return std::nullopt;
    call.arguments = std::move(*text);
  }
  return call;
}

ToolDelta BufferedParser::push(std::string_view text) {
  pending_ += text;
  ToolDelta out;
  step(out, false);
  return out;
}

ToolDelta BufferedParser::finish() {
  ToolDelta out;
  step(out, true);
  return out;
}

void DelimitedCallParser::close_call(ToolDelta& out, std::string_view body, bool closed) {
  std::optional<std::vector<ToolCall>> calls = parse_(body);
  if (calls && !calls->empty()) {
    for (ToolCall& c : *calls) out.calls.push_back(std::move(c));
    after_call_ = true;
    return;
  }
  out.content += opener_;
  out.content += body;
  if (closed) out.content += closer_;
  after_call_ = false;
}

void DelimitedCallParser::step(ToolDelta& out, bool final) {
  while (!pending_.empty()) {
    if (in_call_) {
      const size_t end = closer_.empty() ? std::string::npos : pending_.find(closer_);
      if (end == std::string::npos) {
        if (!final) return;  // the call is still being written
        close_call(out, pending_, false);
        pending_.clear();
        in_call_ = false;
        return;
      }
      const std::string body = pending_.substr(0, end);
      pending_.erase(0, end + closer_.size());
      in_call_ = false;
      close_call(out, body, true);
      continue;
    }
    if (after_call_) {  // whitespace after a call goes; then another call, or text
      size_t n = 0;
      while (n < pending_.size() && is_space(pending_[n])) ++n;
      const std::string_view rest = std::string_view(pending_).substr(n);
      if (!final && (rest.empty() || (rest.size() < opener_.size() && opener_.starts_with(rest))))
        return;  // undecided
      pending_.erase(0, n);
      after_call_ = false;
      if (pending_.empty()) return;
    }
    const size_t at = pending_.find(opener_);
    if (at != std::string::npos) {
      out.content.append(pending_, 0, at);
      pending_.erase(0, at + opener_.size());
      in_call_ = true;
      after_call_ = false;
      continue;
    }
    const size_t keep = final ? 0 : partial_suffix(pending_, opener_);
    out.content.append(pending_, 0, pending_.size() - keep);
    pending_.erase(0, pending_.size() - keep);
    return;
  }
}

}  // namespace hearth::chat::tools
