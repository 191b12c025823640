// The one error type of the template engine: a hearth::Error whose what() carries the template
// location; kind and the bare message stay available (raise_exception's message is exact).
#pragma once

#include <string>

#include "chat/ast.h"
#include "util/error.h"

namespace hearth::chat {

class TemplateError : public hearth::Error {
 public:
  enum class Kind {
    Syntax,     // the source does not parse
    Raised,     // the template called raise_exception(message)
    Type,       // Python TypeError (e.g. str + None, 'x' in None)
    Undefined,  // attribute/item of an undefined value
    Security,   // a mutating method (the sandbox is immutable)
    Limit,      // recursion, loop-iteration, output or work limit
    Runtime,    // anything else (bad filter argument, unknown filter, ...)
  };
  TemplateError(Kind kind, Location loc, std::string message);

  Kind kind() const { return kind_; }
  const Location& location() const { return loc_; }
  const std::string& message() const { return message_; }  // without the location
  static const char* kind_name(Kind k);

 private:
  Kind kind_;
  Location loc_;
  std::string message_;
};

}  // namespace hearth::chat
