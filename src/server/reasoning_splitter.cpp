#include "server/reasoning_splitter.h"

namespace hearth::server {

namespace {
constexpr std::string_view kOpen = "<think>";
constexpr std::string_view kClose = "</think>";

// Length of the longest suffix of `s` that is a proper prefix of `tag`.
size_t partial_tag(std::string_view s, std::string_view tag) {
  for (size_t n = std::min(s.size(), tag.size() - 1); n > 0; --n)
    if (s.substr(s.size() - n) == tag.substr(0, n)) return n;
  return 0;
}
}  // namespace

ReasoningSplitter::Parts ReasoningSplitter::push(std::string_view text) {
  Parts out;
  held_.append(text);
  for (;;) {
    const std::string_view tag = in_reasoning_ ? kClose : kOpen;
    std::string& dst = in_reasoning_ ? out.reasoning : out.content;
    if (!in_reasoning_ && seen_open_) {  // after the block: everything is content
      dst += held_;
      held_.clear();
      return out;
    }
    const size_t at = held_.find(tag);
    if (at == std::string::npos) {
      const size_t keep = partial_tag(held_, tag);
      dst += held_.substr(0, held_.size() - keep);
      held_.erase(0, held_.size() - keep);
      return out;
    }
    dst += held_.substr(0, at);
    held_.erase(0, at + tag.size());
    if (in_reasoning_) {
      in_reasoning_ = false;
      seen_open_ = true;
      while (!held_.empty() && held_.front() == '\n') held_.erase(0, 1);
    } else {
      in_reasoning_ = true;
      seen_open_ = false;
    }
  }
}

ReasoningSplitter::Parts ReasoningSplitter::flush() {
  Parts out;
  (in_reasoning_ ? out.reasoning : out.content) = std::move(held_);
  held_.clear();
  return out;
}

}  // namespace hearth::server
