// Template source -> statement tree (Jinja2's grammar and operator precedence).
#pragma once

#include <string>

#include "chat/ast.h"

namespace hearth::chat {

struct Program {
  Body body;
};

// Throws TemplateError (Syntax) with line:column.
Program parse_template(const std::string& source, int max_nesting = 200);

}  // namespace hearth::chat
