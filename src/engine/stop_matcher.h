// Stop strings over a stream of text pieces: text that could still turn into a stop string is
// held back, so no partial stop text ever reaches the client, and the stop text itself is never
// emitted.
#pragma once

#include <string>
#include <vector>

namespace hearth {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);

  // Adds a piece; returns the text now safe to emit. After a stop string is found, stopped()
  // is true and the text before it has been returned; later pieces are ignored.
  std::string push(const std::string& piece);
  // The held-back text, at the end of generation (when no stop string matched).
  std::string flush();
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

}  // namespace hearth
