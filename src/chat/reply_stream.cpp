#include "chat/reply_stream.h"

namespace hearth::chat {
namespace {

void append(ReasoningDelta& to, const ReasoningDelta& d) {
  to.reasoning += d.reasoning;
  to.content += d.content;
}

}  // namespace

ReasoningDelta ReplyStream::record(ReasoningDelta d) {
  append(all_, d);
  return d;
}

ReasoningDelta ReplyStream::push(std::string_view text) {
  if (!splitter_) return record({"", std::string(text)});
  return record(splitter_->push(text));
}

ReasoningDelta ReplyStream::finish() {
  if (!splitter_) return {};
  return record(splitter_->finish());
}

ReasoningDelta ReplyStream::push(std::string_view text, bool last) {
  ReasoningDelta d = push(text);
  if (last) append(d, finish());
  return d;
}

ReasoningDelta ReplyStream::whole(std::string_view text) {
  return push(text, true);
}

}  // namespace hearth::chat
