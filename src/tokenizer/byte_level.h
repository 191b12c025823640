// GPT-2's byte-level alphabet: a reversible mapping of the 256 byte values onto 256 printable
// Unicode characters, so that byte-level BPE vocabularies can store any byte string as text.
// Bytes that are printable Latin-1 ('!'..'~', U+00A1..U+00AC, U+00AE..U+00FF) stand for
// themselves; the other 68 (controls, space, DEL, NBSP, soft hyphen) take U+0100, U+0101, ... in
// byte order (so ' ' is 'Ġ' U+0120 and '\n' is 'Ċ' U+010A).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace hearth {

// The character byte `b` stands for, as UTF-8 (1 or 2 bytes).
std::string_view byte_level_char(uint8_t b);

// The byte the character `cp` stands for; -1 when `cp` is not one of the 256 characters.
int byte_level_byte(uint32_t cp);

// Appends the byte-level text of `bytes` (each byte -> its character).
void byte_level_encode_append(std::string_view bytes, std::string& out);

// Appends the bytes a byte-level token text stands for. Characters outside the alphabet (which
// real vocabularies only have in added tokens) and ill-formed UTF-8 are copied verbatim.
void byte_level_decode_append(std::string_view text, std::string& out);

}  // namespace hearth
