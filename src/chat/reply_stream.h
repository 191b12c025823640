// One reply as a chat client sees it: the generated text in, answer (content) and reasoning
// deltas out. The one place a reply is split into reasoning and answer, shared by the server's
// chat replies (which feed it the coalesced text of the engine's events) and `hearth chat`
// (which feeds it the engine's token texts as they come). Without a splitter everything is content.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "chat/reasoning.h"

namespace hearth::chat {

class ReplyStream {
 public:
  explicit ReplyStream(std::optional<ReasoningSplitter> splitter = std::nullopt)
      : splitter_(std::move(splitter)) {}

  // Whether reasoning is split off (without it, the reply is all content as it comes).
  bool splits() const { return splitter_.has_value(); }

  // A piece of the reply's text, as generated.
  ReasoningDelta push(std::string_view text);
  // The end of the reply: what was held back (an undecided marker).
  ReasoningDelta finish();
  // Text as it comes, and whether the reply ends with it (the held-back text is let go).
  ReasoningDelta push(std::string_view text, bool last);
  // A whole reply at once (push then finish, in one delta).
  ReasoningDelta whole(std::string_view text);

  // All of the reply so far.
  const std::string& content() const { return all_.content; }
  const std::string& reasoning() const { return all_.reasoning; }

 private:
  ReasoningDelta record(ReasoningDelta d);

  std::optional<ReasoningSplitter> splitter_;
  ReasoningDelta all_;
};

}  // namespace hearth::chat
