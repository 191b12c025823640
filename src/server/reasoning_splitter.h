// reasoning_format "deepseek": text between <think> and </think> becomes reasoning_content,
// the rest content. Works on streamed deltas: a partial tag at the end of a delta is held back
// until the next one decides it. (The chat layer's splitter replaces this when it lands.)
#pragma once

#include <string>
#include <string_view>

namespace hearth::server {

class ReasoningSplitter {
 public:
  struct Parts {
    std::string reasoning;
    std::string content;
  };
  // `start_in_reasoning`: the prompt already opened <think> (templates that force thinking).
  explicit ReasoningSplitter(bool start_in_reasoning = false) : in_reasoning_(start_in_reasoning) {}
  Parts push(std::string_view text);
  Parts flush();  // held text, as whatever it was in

 private:
  bool in_reasoning_;
  bool seen_open_ = false;  // only the first <think> block counts
  std::string held_;
};

}  // namespace hearth::server
