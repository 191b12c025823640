// Functionary v3.2: the reply is messages, each after ">>>" and its recipient's name on a line of
// its own; "all" is the user (content), any other name a function, its arguments JSON:
//   >>>all
//   Let me check.>>>get_weather
//   {"city": "Paris"}>>>get_time
//   {"tz": "Europe/Paris"}
// Functionary v3.1 (Llama 3.1 based) writes a call as <function=get_weather>{"city": "Paris"}
// </function>, after any content. Both are read here: the templates tell the versions apart,
// the replies need not.
#include <algorithm>
#include <cctype>

#include "chat/tool_parsers.h"

namespace hearth::chat::tools {
namespace {

constexpr std::string_view kRecipientMark = ">>>";
constexpr std::string_view kFunctionOpen = "<function=";
constexpr std::string_view kFunctionClose = "</function>";

bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
}

// What the text at a ">>>" or "<function=" turns out to be.
struct Header {
  enum Kind { NotHeader, Incomplete, Recipient, Function } kind = NotHeader;
  std::string name;
  size_t size = 0;  // the header's bytes, ">>>NAME\n" or "<function=NAME>"
};

Header match_header(std::string_view text) {
  const bool recipient = text.starts_with(kRecipientMark);
  const size_t start = recipient ? kRecipientMark.size() : kFunctionOpen.size();
  const char end_char = recipient ? '\n' : '>';
  size_t i = start;
  while (i < text.size() && is_name_char(text[i])) ++i;
  if (i == text.size()) return {Header::Incomplete};
  if (text[i] != end_char || i == start) return {Header::NotHeader};
  return {recipient ? Header::Recipient : Header::Function,
          std::string(text.substr(start, i - start)), i + 1};
}

class FunctionaryParser : public BufferedParser {
 private:
  enum class State { Content, JsonArguments, FunctionBody, AfterCall };

  void step(ToolDelta& out, bool final) override {
    while (true) {
      bool more = false;  // whether the state changed and the rest is to be read again
      switch (state_) {
        case State::Content:
          more = read_content(out, final);
          break;
        case State::JsonArguments:
          more = read_json_arguments(out, final);
          break;
        case State::FunctionBody:
          more = read_function_body(out, final);
          break;
        case State::AfterCall:
          more = skip_space_after_call();
          break;
      }
      if (!more) return;
    }
  }

  // Content up to the next header; false when the pending text is used up (or held back).
  bool read_content(ToolDelta& out, bool final) {
    size_t from = 0;
    while (true) {
      const size_t at =
          std::min(pending_.find(kRecipientMark, from), pending_.find(kFunctionOpen, from));
      if (at == std::string::npos) break;
      Header h = match_header(std::string_view(pending_).substr(at));
      if (h.kind == Header::Incomplete && !final) {
        out.content.append(pending_, 0, at);
        pending_.erase(0, at);
        return false;
      }
      if (h.kind == Header::NotHeader || h.kind == Header::Incomplete) {
        from = at + 1;  // just text; ">>>>" may still hold a header one byte on
        continue;
      }
      out.content.append(pending_, 0, at);
      opener_ = pending_.substr(at, h.size);
      pending_.erase(0, at + h.size);
      if (h.kind == Header::Recipient && h.name == "all") return true;  // content follows
      name_ = std::move(h.name);
      state_ = h.kind == Header::Recipient ? State::JsonArguments : State::FunctionBody;
      return true;
    }
    const size_t keep = final ? 0
                              : std::max(partial_suffix(pending_, kRecipientMark),
                                         partial_suffix(pending_, kFunctionOpen));
    out.content.append(pending_, 0, pending_.size() - keep);
    pending_.erase(0, pending_.size() - keep);
    return false;
  }

  // v3.2's arguments: the JSON value after the recipient line.
  bool read_json_arguments(ToolDelta& out, bool final) {
    const size_t extent = json_value_extent(pending_);
    const bool undecided = extent == std::string::npos || (extent == 0 && trim(pending_).empty());
    if (undecided && !final) return false;
    if (!undecided && extent > 0 && add_call(out, std::string_view(pending_).substr(0, extent))) {
      pending_.erase(0, extent);
      state_ = State::AfterCall;
      return true;
    }
    // Not JSON, or cut off: the header was text, and what follows is read as text again.
    out.content += opener_;
    state_ = State::Content;
    return true;
  }

  // v3.1's arguments: the JSON up to </function>; a reply cut off before it still makes a call
  // of a whole JSON object.
  bool read_function_body(ToolDelta& out, bool final) {
    const size_t end = pending_.find(kFunctionClose);
    if (end == std::string::npos && !final) return false;
    const size_t body_size = end == std::string::npos ? pending_.size() : end;
    const size_t block_size =
        end == std::string::npos ? pending_.size() : end + kFunctionClose.size();
    if (add_call(out, std::string_view(pending_).substr(0, body_size)))
      state_ = State::AfterCall;
    else {
      out.content += opener_;
      out.content.append(pending_, 0, block_size);
      state_ = State::Content;
    }
    pending_.erase(0, block_size);
    return true;
  }

  // Whitespace after a call is dropped, whatever follows it.
  bool skip_space_after_call() {
    size_t n = 0;
    while (n < pending_.size() && is_space(pending_[n])) ++n;
    pending_.erase(0, n);
    if (pending_.empty()) return false;
    state_ = State::Content;
    return true;
  }

  bool add_call(ToolDelta& out, std::string_view json_text) {
    auto value = parse_json(json_text);
    if (!value) return false;
    auto arguments = arguments_text(*value);
    if (!arguments) return false;
    out.calls.push_back({name_, std::move(*arguments), ""});
    return true;
  }

  State state_ = State::Content;
  std::string opener_;  // the current call's header as written, for when it turns out text
  std::string name_;
};

}  // namespace

std::unique_ptr<ToolCallParser> make_functionary_parser() {
  return std::make_unique<FunctionaryParser>();
}

}  // namespace hearth::chat::tools
