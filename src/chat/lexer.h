// Splits template source into text and tag tokens the way Jinja2 does with trim_blocks and
// lstrip_blocks on: newlines normalised to \n, one trailing newline dropped, `-` strips
// whitespace beside a tag, `+` keeps it, comments vanish, {% raw %} bodies stay text.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chat/ast.h"

namespace hearth::chat {

struct Token {
  enum class Kind {
    Text,
    VarBegin,
    VarEnd,
    BlockBegin,
    BlockEnd,
    Name,
    String,
    Int,
    Float,
    Op,
    Eof,
  };
  Kind kind;
  std::string text;  // Text / Name / String (unescaped) / Op / number spelling
  uint32_t offset = 0;
};

struct LexedSource {
  std::string source;         // normalised
  std::vector<Token> tokens;  // ends with Eof
  std::vector<uint32_t> line_starts;
  Location locate(uint32_t offset) const;
};

// Throws TemplateError (Syntax) with the location of the problem.
LexedSource lex(const std::string& source);

}  // namespace hearth::chat
