// Llama 3.x: a call is a JSON object, {"name": "get_weather", "parameters": {"city": "Paris"}}
// ("arguments" also taken), several separated by ";". Either the whole reply is such calls
// (3.2 and 3.3 write them bare), or they follow <|python_tag|> after any content (3.1):
//   Let me check.<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}
// 3.1's built-in tools are called in Python after the tag instead, and are read as a call of
// that name when the arguments are plain literals:
//   <|python_tag|>brave_search.call(query="weather in Paris")
// Neither has a closer: the calls run to the end of the reply, so they come out at finish().
#include <cctype>

#include "chat/tool_parsers.h"

namespace hearth::chat::tools {
namespace {

using nlohmann::json;

constexpr std::string_view kPythonTag = "<|python_tag|>";
constexpr std::string_view kBuiltinCall = ".call(";

enum class Scan { Calls, NotCalls, Undecided };

// JSON call objects separated by ";" (one trailing ";" allowed), appended to `calls`. Undecided
// when `final` is false and more text could still make them calls. A bare reply must name its
// arguments: {"name": "Ann", "age": 3} is an answer, not a call.
Scan scan_json_calls(std::string_view text, bool final, bool need_arguments,
                     std::vector<ToolCall>& calls) {
  const Scan wait = final ? Scan::NotCalls : Scan::Undecided;
  size_t pos = 0;
  while (true) {
    const std::string_view rest = text.substr(pos);
    if (trim(rest).empty()) return final && !calls.empty() ? Scan::Calls : wait;
    const size_t extent = json_value_extent(rest);
    if (extent == std::string_view::npos) return wait;
    if (extent == 0) return Scan::NotCalls;
    auto obj = parse_json(rest.substr(0, extent));
    if (!obj || !obj->is_object()) return Scan::NotCalls;
    const char* args_key = obj->contains("parameters") ? "parameters" : "arguments";
    if (need_arguments && !obj->contains(args_key)) return Scan::NotCalls;
    auto call = call_from_object(*obj, "name", args_key);
    if (!call) return Scan::NotCalls;
    calls.push_back(std::move(*call));
    pos += extent;
    while (pos < text.size() && is_space(text[pos])) ++pos;
    if (pos == text.size()) continue;  // the end, or a ";" still to come
    if (text[pos] != ';') return Scan::NotCalls;
    ++pos;
  }
}

bool is_identifier_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// A Python literal at the start of `rest` (a quoted string, a number, True/False/None) as JSON,
// consumed from `rest`; nullopt for anything else.
std::optional<json> python_literal(std::string_view& rest) {
  if (!rest.empty() && (rest[0] == '"' || rest[0] == '\'')) {
    const char quote = rest[0];
    std::string value;
    for (size_t i = 1; i < rest.size(); ++i) {
      char c = rest[i];
      if (c == quote) {
        rest.remove_prefix(i + 1);
        return value;
      }
      if (c == '\\' && i + 1 < rest.size()) {
        c = rest[++i];
        if (c == 'n') c = '\n';
        if (c == 't') c = '\t';
      }
      value += c;
    }
    return std::nullopt;
  }
  size_t n = 0;
  while (n < rest.size() && (is_identifier_char(rest[n]) || rest[n] == '.' || rest[n] == '-')) ++n;
  const std::string_view word = rest.substr(0, n);
  rest.remove_prefix(n);
  if (word == "True") return true;
  if (word == "False") return false;
  if (word == "None") return nullptr;
  auto number = parse_json(word);
  if (number && number->is_number()) return number;
  return std::nullopt;
}

// NAME.call(key=literal, …), the whole of `text`.
std::optional<ToolCall> parse_builtin_call(std::string_view text) {
  text = trim(text);
  size_t n = 0;
  while (n < text.size() && is_identifier_char(text[n])) ++n;
  const std::string name(text.substr(0, n));
  text.remove_prefix(n);
  if (name.empty() || !text.starts_with(kBuiltinCall)) return std::nullopt;
  text.remove_prefix(kBuiltinCall.size());
  json args = json::object();
  while (true) {
    text = trim(text);
    if (text == ")")  // string literals may hold bytes that are not UTF-8: replaced
      return ToolCall{name, args.dump(-1, ' ', false, json::error_handler_t::replace), ""};
    size_t key_size = 0;
    while (key_size < text.size() && is_identifier_char(text[key_size])) ++key_size;
    const std::string key(text.substr(0, key_size));
    text = trim(text.substr(key_size));
    if (key.empty() || !text.starts_with('=')) return std::nullopt;
    text = trim(text.substr(1));
    auto value = python_literal(text);
    if (!value) return std::nullopt;
    args[key] = std::move(*value);
    text = trim(text);
    if (text.starts_with(','))
      text.remove_prefix(1);
    else if (!text.starts_with(')'))
      return std::nullopt;
  }
}

std::optional<std::vector<ToolCall>> parse_after_python_tag(std::string_view body) {
  std::vector<ToolCall> calls;
  if (scan_json_calls(body, true, /*need_arguments=*/false, calls) == Scan::Calls) return calls;
  if (auto call = parse_builtin_call(body)) return std::vector<ToolCall>{std::move(*call)};
  return std::nullopt;
}

class Llama3Parser : public ToolCallParser {
 public:
  ToolDelta push(std::string_view text) override {
    if (mode_ == Mode::Tagged) return tagged_.push(text);
    held_ += text;
    if (mode_ == Mode::Undecided) {
      const size_t first = held_.find_first_not_of(" \t\r\n");
      if (first == std::string::npos) return {};  // only whitespace yet
      mode_ = held_[first] == '{' ? Mode::BareCalls : Mode::Tagged;
    }
    // Bare calls wait for the end, unless the text already cannot be calls.
    std::vector<ToolCall> calls;
    if (mode_ == Mode::BareCalls &&
        scan_json_calls(held_, false, /*need_arguments=*/true, calls) != Scan::NotCalls)
      return {};
    return to_tagged();
  }

  ToolDelta finish() override {
    if (mode_ != Mode::Tagged) {
      std::vector<ToolCall> calls;
      if (mode_ == Mode::BareCalls &&
          scan_json_calls(held_, true, /*need_arguments=*/true, calls) == Scan::Calls) {
        held_.clear();
        return ToolDelta{"", "", std::move(calls)};
      }
      ToolDelta out = to_tagged();
      out.append(tagged_.finish());
      return out;
    }
    return tagged_.finish();
  }

 private:
  // Not bare calls: the held text, and all that follows, is content with perhaps a python tag.
  ToolDelta to_tagged() {
    mode_ = Mode::Tagged;
    ToolDelta out = tagged_.push(held_);
    held_.clear();
    return out;
  }

  enum class Mode { Undecided, BareCalls, Tagged };
  Mode mode_ = Mode::Undecided;
  std::string held_;  // the reply so far, while it may be bare calls
  DelimitedCallParser tagged_{std::string(kPythonTag), "", parse_after_python_tag};
};

}  // namespace

std::unique_ptr<ToolCallParser> make_llama3_parser() {
  return std::make_unique<Llama3Parser>();
}

}  // namespace hearth::chat::tools
