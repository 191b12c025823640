// Small text helpers shared by the reply splitters (reasoning.cpp, the tool-call parsers).
#pragma once

#include <cstddef>
#include <string_view>

namespace hearth::chat {

// JSON's (and the templates') whitespace: space, newline, carriage return, tab.
bool is_space(char c);
// Length of the longest suffix of `s` that is a proper prefix of `marker`: text to hold back,
// because the next piece may complete the marker.
size_t partial_suffix(std::string_view s, std::string_view marker);

}  // namespace hearth::chat
