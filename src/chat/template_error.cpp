#include "chat/template_error.h"

#include <fmt/format.h>

namespace hearth::chat {

TemplateError::TemplateError(Kind kind, Location loc, std::string message)
    : hearth::Error(fmt::format("chat template {}:{}: {}: {}", loc.line, loc.column,
                                kind_name(kind), message)),
      kind_(kind),
      loc_(loc),
      message_(std::move(message)) {}

const char* TemplateError::kind_name(Kind k) {
  switch (k) {
    case Kind::Syntax:
      return "syntax error";
    case Kind::Raised:
      return "raise_exception";
    case Kind::Type:
      return "TypeError";
    case Kind::Undefined:
      return "UndefinedError";
    case Kind::Security:
      return "SecurityError";
    case Kind::Limit:
      return "limit exceeded";
    case Kind::Runtime:
      return "error";
  }
  return "error";
}

}  // namespace hearth::chat
