// gpt-oss (harmony): the reply is messages, each a header, <|message|>, the text and an end
// marker; the generation prompt ends with <|start|>assistant, so the first header comes without
// them:
//   <|channel|>analysis<|message|>We need the weather.<|end|><|start|>assistant<|channel|>
//   commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Paris"}<|call|>
// (one line in the reply). The header's channel says what the text is: analysis is reasoning,
// final (and commentary to no one) content; a recipient, to=functions.NAME, makes it a call
// with the text as its JSON arguments. The recipient may also come before the channel:
// <|start|>assistant to=functions.f<|channel|>commentary json<|message|>…. <|return|> and
// <|call|> end the generation, so a reply may lack them: finish() ends the last message too.
// A reply without headers is content.
#include <algorithm>
#include <array>
#include <span>

#include "chat/tool_parsers.h"

namespace hearth::chat::tools {
namespace {

constexpr std::string_view kStart = "<|start|>";
constexpr std::string_view kChannel = "<|channel|>";
constexpr std::string_view kMessage = "<|message|>";
constexpr std::string_view kFunctionsPrefix = "functions.";

// What ends a message's text: its end markers (consumed), or the next message's start (kept).
constexpr std::array<std::string_view, 3> kEndMarkers = {"<|end|>", "<|return|>", "<|call|>"};
constexpr std::array<std::string_view, 5> kTextEnds = {"<|end|>", "<|return|>", "<|call|>", kStart,
                                                       kChannel};

enum class Match { Yes, No, NeedMore };

// `literal` at the start of `rest` (consumed), not there, or not decided by the text so far.
Match take(std::string_view& rest, std::string_view literal) {
  if (rest.starts_with(literal)) {
    rest.remove_prefix(literal.size());
    return Match::Yes;
  }
  return literal.starts_with(rest) ? Match::NeedMore : Match::No;
}

// Skips spaces; false when that reaches the end of the text (which is then undecided).
bool skip_spaces(std::string_view& rest) {
  while (!rest.empty() && is_space(rest.front())) rest.remove_prefix(1);
  return !rest.empty();
}

struct HeaderScan {
  enum Kind { Undecided, NotHeader, Header } kind;
  size_t size;  // Header: the bytes up to and with <|message|>; NotHeader: the bytes read
};

// A message's start: [<|start|>][assistant][ to=RECIPIENT]<|channel|>CHANNEL…<|message|>, or a
// header with no channel, [<|start|>][assistant][ to=RECIPIENT]<|message|>.
HeaderScan scan_header(std::string_view text) {
  std::string_view rest = text;
  auto read = [&] { return text.size() - rest.size(); };
  if (take(rest, kStart) == Match::NeedMore || take(rest, "assistant") == Match::NeedMore ||
      !skip_spaces(rest))
    return {HeaderScan::Undecided, 0};
  if (const Match to = take(rest, "to="); to == Match::NeedMore) {
    return {HeaderScan::Undecided, 0};
  } else if (to == Match::Yes) {
    while (!rest.empty() && !is_space(rest.front()) && rest.front() != '<') rest.remove_prefix(1);
    if (!skip_spaces(rest)) return {HeaderScan::Undecided, 0};
  }
  const Match channel = take(rest, kChannel);
  if (channel == Match::NeedMore) return {HeaderScan::Undecided, 0};
  if (channel == Match::No) {
    const Match message = take(rest, kMessage);
    if (message == Match::NeedMore) return {HeaderScan::Undecided, 0};
    return {message == Match::Yes ? HeaderScan::Header : HeaderScan::NotHeader, read()};
  }
  // The rest of a header is one line: a newline first means this was text.
  const size_t message = rest.find(kMessage), newline = rest.find('\n');
  if (newline < message) return {HeaderScan::NotHeader, read()};
  if (message == std::string_view::npos) return {HeaderScan::Undecided, 0};
  return {HeaderScan::Header, read() + message + kMessage.size()};
}

// The word after `key` in a header ("<|channel|>" → "analysis", "to=" → "functions.f").
std::string header_word(std::string_view header, std::string_view key) {
  size_t at = header.find(key);
  // "to=" only as a word of its own, not inside the channel's name.
  while (key == "to=" && at != std::string_view::npos && at > 0 && !is_space(header[at - 1]) &&
         header[at - 1] != '>')
    at = header.find(key, at + 1);
  if (at == std::string_view::npos) return "";
  std::string_view word = header.substr(at + key.size());
  size_t n = 0;
  while (n < word.size() && !is_space(word[n]) && word[n] != '<') ++n;
  return std::string(word.substr(0, n));
}

// Where the first of `markers` is in `text`, and which.
std::pair<size_t, std::string_view> find_first(std::string_view text,
                                               std::span<const std::string_view> markers) {
  std::pair<size_t, std::string_view> first{std::string_view::npos, {}};
  for (std::string_view m : markers)
    if (const size_t at = text.find(m); at < first.first) first = {at, m};
  return first;
}

bool is_end_marker(std::string_view marker) {
  return std::find(kEndMarkers.begin(), kEndMarkers.end(), marker) != kEndMarkers.end();
}

class HarmonyParser : public BufferedParser {
 private:
  enum class State { MessageStart, Text, CallArguments };

  void step(ToolDelta& out, bool final) override {
    while (true) {
      bool more = false;  // whether the state changed and the rest is to be read again
      switch (state_) {
        case State::MessageStart:
          more = read_header(out, final);
          break;
        case State::Text:
          more = read_text(out, final);
          break;
        case State::CallArguments:
          more = read_call(out, final);
          break;
      }
      if (!more) return;
    }
  }

  bool read_header(ToolDelta& out, bool final) {
    if (pending_.empty()) return false;
    HeaderScan scan = scan_header(pending_);
    if (scan.kind == HeaderScan::Undecided) {
      if (final) out.content += pending_;  // a header cut off: text
      if (final) pending_.clear();
      return false;
    }
    if (scan.kind == HeaderScan::NotHeader) {
      // Text where a header should be: content, read as a message's text from where the
      // header went wrong (so a marker there still ends it).
      out.content.append(pending_, 0, scan.size);
      pending_.erase(0, scan.size);
      text_is_reasoning_ = false;
      state_ = State::Text;
      return true;
    }
    header_ = pending_.substr(0, scan.size);
    pending_.erase(0, scan.size);
    const std::string recipient = header_word(header_, "to=");
    if (!recipient.empty()) {
      // Only functions' calls are the client's; a built-in tool's call (browser.search,
      // python) stays text.
      call_name_ = recipient.starts_with(kFunctionsPrefix)
                       ? recipient.substr(kFunctionsPrefix.size())
                       : std::string();
      state_ = State::CallArguments;
      return true;
    }
    text_is_reasoning_ = header_word(header_, kChannel) == "analysis";
    state_ = State::Text;
    return true;
  }

  // A message's text streams out, less a tail that may be the start of a marker.
  bool read_text(ToolDelta& out, bool final) {
    std::string& sink = text_is_reasoning_ ? out.reasoning : out.content;
    const auto [at, marker] = find_first(pending_, kTextEnds);
    if (at == std::string::npos) {
      size_t keep = 0;
      if (!final)
        for (std::string_view m : kTextEnds) keep = std::max(keep, partial_suffix(pending_, m));
      sink.append(pending_, 0, pending_.size() - keep);
      pending_.erase(0, pending_.size() - keep);
      return false;
    }
    sink.append(pending_, 0, at);
    pending_.erase(0, is_end_marker(marker) ? at + marker.size() : at);
    state_ = State::MessageStart;
    return true;
  }

  // A call's arguments come out whole, at the message's end.
  bool read_call(ToolDelta& out, bool final) {
    const auto [at, marker] = find_first(pending_, kTextEnds);
    if (at == std::string::npos && !final) return false;
    const size_t body_size = at == std::string::npos ? pending_.size() : at;
    const size_t used =
        at != std::string::npos && is_end_marker(marker) ? at + marker.size() : body_size;
    std::optional<std::string> arguments;
    if (auto value = parse_json(std::string_view(pending_).substr(0, body_size)))
      arguments = arguments_text(*value);
    if (!call_name_.empty() && arguments) {
      out.calls.push_back({call_name_, std::move(*arguments), ""});
    } else {  // malformed, or not a function's: the message as written
      out.content += header_;
      out.content.append(pending_, 0, used);
    }
    pending_.erase(0, used);
    state_ = State::MessageStart;
    return true;
  }

  State state_ = State::MessageStart;
  bool text_is_reasoning_ = false;
  std::string header_;     // the current message's header as written, up to and with <|message|>
  std::string call_name_;  // the function a call message is to; empty for another recipient
};

}  // namespace

std::unique_ptr<ToolCallParser> make_harmony_parser() {
  return std::make_unique<HarmonyParser>();
}

}  // namespace hearth::chat::tools
