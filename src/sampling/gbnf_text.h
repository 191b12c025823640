// Pieces of GBNF text (the grammar dialect llama-server accepts) shared by the JSON Schema
// converter: quoted literals, character classes over code points, the JSON-string spelling of a
// set of characters, and repetition suffixes.
//
// Grammars match code points (a UTF-8 input is decoded first), as llama.cpp's engine does: a
// class like [^"\\] matches one whole code point. Code points above U+007F are written as raw
// UTF-8 inside literals, and as \uHHHH / \UHHHHHHHH inside classes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hearth::gbnf {

inline constexpr uint32_t kMaxCodePoint = 0x10FFFF;
// The largest count written into a repetition {m,n}: engines such as llama.cpp's expand a
// repetition into that many rules.
inline constexpr uint64_t kMaxRepeat = 10000;

// A set of code points: sorted, disjoint, non-adjacent inclusive ranges.
struct CpRange {
  uint32_t lo = 0;
  uint32_t hi = 0;
};
using CpSet = std::vector<CpRange>;

// Sorts and merges overlapping or adjacent ranges.
CpSet cp_normalize(CpSet s);
CpSet cp_union(const CpSet& a, const CpSet& b);
CpSet cp_complement(const CpSet& s);  // within [0, kMaxCodePoint]
CpSet cp_intersect(const CpSet& a, const CpSet& b);
bool cp_contains(const CpSet& s, uint32_t cp);

// Appends the UTF-8 bytes of `cp`.
void append_utf8(std::string& out, uint32_t cp);
// The code points of `s`; nullopt when it is not valid UTF-8.
std::optional<std::vector<uint32_t>> decode_utf8(std::string_view s);

// `text` as a GBNF literal: "..." with \" \\ \n \t and \xHH for other control bytes;
// other bytes are copied (UTF-8 stays UTF-8).
std::string literal(std::string_view text);
// One of `texts` (UTF-8, at least one; repeats count once) as a GBNF expression: up to 16 as
// "a | b | c" in their order. Many texts are factored
// by their common prefixes, as a trie of groups: the matcher keeps one stack alive per
// alternative it has not yet ruled out, so a flat alternation of an enum of 10,000 names would
// be 10,000 stacks at its first character (past the matcher's limits), the trie a few dozen.
std::string literal_alternatives(std::vector<std::string> texts);
// A GBNF character class matching exactly the code points of `s` (non-empty): [...] or, when the
// set reaches the top of the code space, [^...] of its complement.
std::string char_class(const CpSet& s);

// The canonical escape inside a JSON string for a code point that cannot appear raw (the
// quote, the backslash, \b \f \n \r \t, or \u00xx in lower-case hex for other control
// characters), the way nlohmann::json::dump writes them; nullopt for one written raw.
std::optional<std::string> json_escape(uint32_t cp);
// A GBNF expression matching one character of `s` (non-empty) as written inside a JSON
// string: raw where JSON allows it, else by its canonical escape (json_escape). A single
// element or a parenthesized alternation.
std::string json_char_expr(const CpSet& s);

// The repetition suffix for between `lo` and `hi` copies (hi nullopt: no upper bound):
// "", "?", "*", "+", "{n}", "{n,}" or "{m,n}". Callers skip the element when hi == 0.
std::string repeat_suffix(uint64_t lo, std::optional<uint64_t> hi);

// Whether `expr` is one GBNF element that a suffix can follow without parentheses: a rule
// name, a literal, a class, or a fully parenthesized group.
bool is_atom(std::string_view expr);
// `expr` with parentheses added unless it is already an atom.
std::string atom(const std::string& expr);

}  // namespace hearth::gbnf
