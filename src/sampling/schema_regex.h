// JSON Schema's `pattern` (an ECMAScript regular expression) as GBNF, for a safe subset:
// literals, escapes (\d \w \s and their negations, \n \r \t \f \v \0 \xHH \uHHHH, escaped
// punctuation), classes [...] and [^...] with ranges, `.`, groups ( ), (?: ), (?<name> ),
// alternation |, quantifiers * + ? {m} {m,} {m,n} (a lazy `?` after one is accepted: it does not
// change which strings match as a whole), and ^ / $ at the start / end of a top-level
// alternative, where they are dropped.
//
// The pattern must match the whole string (as if written ^(...)$): JSON Schema searches for a
// match anywhere, so for an unanchored pattern the grammar admits a subset of the valid strings.
// Anything else (backreferences, lookaround, \b, \p{..}, flags, a bare `{`, groups nested
// deeper than 20, counts above 10000) is a hearth::Error.
#pragma once

#include <string>
#include <string_view>

namespace hearth::gbnf {

// A GBNF expression for the text between the quotes of the JSON strings whose decoded value
// matches `pattern`; each character is written raw or with its canonical JSON escape (see
// json_char_expr). `where` (a schema path) starts the error messages.
std::string pattern_to_gbnf(std::string_view pattern, std::string_view where);

}  // namespace hearth::gbnf
