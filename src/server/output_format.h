// What shape the reply must have: OpenAI's `response_format` (json_object, json_schema) and
// llama-server's `json_schema` and `grammar` fields, turned into one compiled grammar for
// constrained decoding (sampling/grammar_constraint.h). A schema becomes GBNF through
// sampling/json_schema_grammar.h. Every failure is a 400 naming the field: a malformed
// response_format, a schema the converter refuses (with the JSON pointer inside the schema), a
// grammar that does not parse (with its line:column), or more than one of the three fields.
#pragma once

#include <memory>

#include <nlohmann/json.hpp>

#include "sampling/grammar.h"

namespace hearth::server {

// The grammar the body asks for, or null for free text; `param` (when given) is set to the field
// it came from (response_format.json_schema.schema, json_schema, grammar...).
std::shared_ptr<const Grammar> parse_output_format(const nlohmann::json& body,
                                                   std::string* param = nullptr);

}  // namespace hearth::server
