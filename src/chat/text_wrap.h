// Python's textwrap.wrap as Jinja's wordwrap filter calls it (expand_tabs=False,
// replace_whitespace=False, drop_whitespace=True, no indents, no max_lines).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace hearth::chat::py {

struct WrapOptions {
  size_t width = 70;  // in code points; must be > 0
  bool break_long_words = true;
  // Python tests `break_on_hyphens is True` when splitting words but its truth when breaking
  // a long word, so the two are separate here.
  bool split_on_hyphens = true;
  bool break_long_on_hyphens = true;
};

// The lines of one paragraph (text without line breaks of its own); none for empty or
// all-whitespace text.
std::vector<std::string> wrap(std::string_view text, const WrapOptions& options);

}  // namespace hearth::chat::py
