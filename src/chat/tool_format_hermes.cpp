// Hermes 2 Pro / Qwen2.5 / Qwen3: each call is a JSON object between <tool_call> and
// </tool_call>, {"name": …, "arguments": {…}}.
//
// The arguments are returned as the model wrote them (the object's text, trimmed), not
// re-serialized: these templates write a string `arguments` back into the history verbatim, so
// the next turn's prompt repeats the reply byte for byte and the prefix cache keeps all of it.
#include "chat/tool_parsers.h"

namespace hearth::chat::tools {
namespace {

// The end of the JSON string starting at s[i] == '"'; npos when it does not end.
size_t string_end(std::string_view s, size_t i) {
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\')
      ++i;
    else if (s[i] == '"')
      return i + 1;
  }
  return std::string_view::npos;
}

// The end of the JSON value starting at s[i] (already known to be valid JSON).
size_t value_end(std::string_view s, size_t i) {
  if (s[i] == '"') return string_end(s, i);
  int depth = 0;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '"') {
      i = string_end(s, i) - 1;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (depth == 0) return i;
      if (--depth == 0) return i + 1;
    } else if (depth == 0 && (c == ',' || is_space(c))) {
      return i;
    }
  }
  return i;
}

// The text of the top-level member `key` of a valid JSON object's text.
std::optional<std::string_view> member_text(std::string_view obj, std::string_view key) {
  size_t i = obj.find('{');
  if (i == std::string_view::npos) return std::nullopt;
  auto skip = [&] {
    while (i < obj.size() && (is_space(obj[i]) || obj[i] == ',' || obj[i] == ':')) ++i;
  };
  for (++i, skip(); i < obj.size() && obj[i] == '"'; skip()) {
    const size_t key_end = string_end(obj, i);
    auto k = parse_json(obj.substr(i, key_end - i));
    i = key_end;
    skip();
    const size_t end = value_end(obj, i);
    if (k && *k == key) return obj.substr(i, end - i);
    i = end;
  }
  return std::nullopt;
}

std::optional<std::vector<ToolCall>> parse_call(std::string_view body) {
  auto v = parse_json(body);
  if (!v) return std::nullopt;
  auto call = call_from_object(*v, "name", "arguments");
  if (!call) return std::nullopt;
  if (auto a = v->find("arguments"); a != v->end() && a->is_object())
    if (auto raw = member_text(trim(body), "arguments")) call->arguments = std::string(*raw);
  return std::vector<ToolCall>{std::move(*call)};
}

}  // namespace

std::unique_ptr<ToolCallParser> make_hermes_parser() {
  return std::make_unique<DelimitedCallParser>("<tool_call>", "</tool_call>", parse_call);
}

}  // namespace hearth::chat::tools
