// UTF-8 helpers shared by the tokenizers and the detokenizers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace hearth {

// The replacement character U+FFFD, UTF-8 encoded.
inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";

// U+2581 LOWER ONE EIGHTH BLOCK, SentencePiece's visible space.
inline constexpr std::string_view kSpmSpace = "\xE2\x96\x81";

// Length of the well-formed UTF-8 character starting at s[i] (1..4), or 0 when the bytes
// there are not one (a stray continuation byte, an impossible byte, a truncated, overlong or
// surrogate sequence, or a value above U+10FFFF). Requires i < s.size().
size_t utf8_char_len(std::string_view s, size_t i);

// Appends to `out` the UTF-8 text of `in` with every ill-formed sequence replaced by U+FFFD,
// one U+FFFD per "maximal subpart" (the Unicode / WHATWG recommended practice): a lead byte
// followed by as many bytes as still form a valid prefix is one error; a stray continuation
// byte or an impossible byte (C0, C1, F5-FF) is one error each.
//
// When `final` is false, a valid but incomplete sequence at the very end of `in` is not
// replaced: it is left unconsumed. Returns the number of bytes of `in` consumed (always
// in.size() when `final` is true; otherwise at least in.size() - 3).
size_t utf8_sanitize_append(std::string_view in, std::string& out, bool final);

// `in` with every ill-formed sequence replaced by U+FFFD (see utf8_sanitize_append).
std::string utf8_sanitize(std::string_view in);

// True when `s` is well-formed UTF-8 (no surrogates, no overlongs, nothing above U+10FFFF).
bool utf8_is_valid(std::string_view s);

}  // namespace hearth
