// UTF-8 decoded one byte at a time, for text that arrives in pieces: a token may end in the
// middle of a character, and the next token completes it. Rejects what is not UTF-8 as early
// as a byte shows it (stray continuation bytes, overlong forms, surrogates, past U+10FFFF).
#pragma once

#include <cstdint>

#include "sampling/grammar.h"

namespace hearth {

// The bytes of a character read so far.
struct Utf8Partial {
  uint32_t bits = 0;      // the character's bits from the bytes read
  uint8_t remaining = 0;  // continuation bytes still to come; 0 between characters
  uint8_t length = 0;     // bytes of the whole character
  bool pending() const { return remaining != 0; }
  bool operator==(const Utf8Partial&) const = default;
};

enum class Utf8Push : uint8_t {
  kChar,     // a character is complete: in `cp`, and the partial state is reset
  kMore,     // valid so far; the partial state holds the bytes
  kInvalid,  // no character starts this way (the partial state is left as it was)
};

Utf8Push utf8_push(Utf8Partial& p, uint8_t byte, uint32_t& cp);

// The code points that could still complete a pending character (never empty, no surrogate
// at either end).
CharRange utf8_pending_range(const Utf8Partial& p);

}  // namespace hearth
