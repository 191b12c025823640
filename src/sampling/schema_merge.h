// allOf for the JSON Schema converter: the parts' keywords merged into one schema whose
// instances are those valid under every part, where that is a keyword-by-keyword matter.
#pragma once

#include <nlohmann/json.hpp>

#include <string_view>
#include <vector>

namespace hearth::gbnf {

// Merges `parts` (schema objects, with `$ref` already replaced by its target and nested allOf
// flattened; the caller drops `true` and rejects `false`):
//   type          intersected ("integer" within "number"); an empty intersection is an error
//   properties    united; a name in several parts gets {"allOf": [its schemas]}
//   required      united
//   additionalProperties  applied across parts: a part's `false` removes the other parts'
//                 properties it does not list (an error if one is required), a part's schema is
//                 added (allOf) to them; the result is false if any part says false, else the
//                 parts' schemas
//   minimum minLength minItems minProperties exclusiveMinimum: the largest; the maxima: the
//                 smallest
//   enum          intersected; an empty intersection is an error
//   annotations   (title, description, default, examples, $comment, $schema, $id, $defs, ...)
//                 dropped
//   anything else must be absent from all parts but one or equal in all; otherwise hearth::Error
//   "<where>: ..." (two parts with anyOf, two different patterns, ...).
nlohmann::json merge_all_of(const std::vector<nlohmann::json>& parts, std::string_view where);

// Whether `key` is an annotation that does not constrain instances.
bool is_annotation_keyword(std::string_view key);

}  // namespace hearth::gbnf
