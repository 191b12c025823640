// Shared by the grammar tests: a JSON grammar in GBNF, and a helper that feeds text in pieces.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "sampling/grammar.h"
#include "sampling/grammar_matcher.h"

namespace hearth::test {

// JSON (RFC 8259) in GBNF: objects, arrays, strings with escapes (no raw control characters),
// numbers, true / false / null, whitespace around values and separators.
inline constexpr std::string_view kJsonGrammar = R"gbnf(
# a JSON document
root    ::= ws value ws
value   ::= object | array | string | number | ( "true" | "false" | "null" )
object  ::= "{" ws ( member ( ws "," ws member )* ws )? "}"
member  ::= string ws ":" ws value
array   ::= "[" ws ( value ( ws "," ws value )* ws )? "]"
string  ::= "\"" (
              [^"\\\x00-\x1F] |
              "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} )
            )* "\""
number  ::= "-"? ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
ws      ::= [ \t\n\r]*
)gbnf";

inline std::shared_ptr<const Grammar> compile(std::string_view text) {
  return std::make_shared<const Grammar>(Grammar::parse(text));
}

enum class Outcome { kRejected, kIncomplete, kComplete };

inline const char* outcome_name(Outcome o) {
  return o == Outcome::kRejected     ? "rejected"
         : o == Outcome::kIncomplete ? "incomplete"
                                     : "complete";
}

inline void PrintTo(Outcome o, std::ostream* os) {
  *os << outcome_name(o);
}

// Feeds `text` to a fresh matcher in the pieces that `cuts` (ascending offsets) separate.
inline Outcome feed(const std::shared_ptr<const Grammar>& g, std::string_view text,
                    const std::vector<size_t>& cuts = {}) {
  GrammarMatcher m(g);
  size_t begin = 0;
  std::vector<size_t> ends = cuts;
  ends.push_back(text.size());
  for (size_t end : ends) {
    if (!m.accept_bytes(text.substr(begin, end - begin))) return Outcome::kRejected;
    begin = end;
  }
  return m.can_end() ? Outcome::kComplete : Outcome::kIncomplete;
}

}  // namespace hearth::test
