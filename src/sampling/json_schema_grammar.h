// JSON Schema → GBNF: the grammar text (llama-server's dialect) that structured output
// (`response_format` json_schema / json_object) hands to the grammar engine.
//
// The grammar's language is the JSON documents valid under the schema — or, where noted below,
// a subset of them — written compactly or with bounded whitespace between tokens (at most one
// space, or a newline and 20 spaces / tabs, at each place JSON allows whitespace; none before
// or after the top-level value). Keys are written the way nlohmann::json writes them (no
// escape other than the canonical ones), and each value of `const` / `enum` is written
// exactly as nlohmann::json::dump writes it (compact, object keys sorted).
//
// Supported keywords:
//   type (one or an array), enum, const, anyOf, oneOf (as anyOf: overlapping alternatives are
//   not excluded), allOf (merged keyword by keyword; see sampling/schema_merge.h), $ref to a
//   local JSON pointer ("#", "#/$defs/x", "#/definitions/x", any "#/..."; recursion becomes a
//   recursive rule; a reference that recurs with no object or array in between is an error),
//   `true` / `{}` (any JSON value), `false` (a property that must be absent; elsewhere an error)
//   objects: properties, required, additionalProperties (absent / true: extra members after the
//     listed ones, with keys other than the listed ones; false: none; a schema: extra members
//     of that schema). Members come in a fixed order: the required properties in the order
//     `properties` lists them (nlohmann::json: sorted by name), then the optional ones, each
//     present or not, in that order, then the extra ones; a required name that `properties`
//     does not list comes after the listed required ones.
//   arrays: items, prefixItems (and draft-4 items: [...] with additionalItems), minItems,
//     maxItems
//   strings: minLength, maxLength (in characters; an escape counts as one), pattern (a regex
//     subset, see sampling/schema_regex.h; the whole string must match), format date, time,
//     date-time, uuid (RFC 3339 / 8-4-4-4-12 hex; other formats: any string)
//   integers: minimum, maximum, exclusiveMinimum, exclusiveMaximum (numbers, or draft-4
//     booleans), exactly, for any finite bound
//   numbers: a minimum or exclusiveMinimum >= 0 excludes negative numbers; other bounds are not
//     enforced
// Without "type", the type is inferred from the keywords present (properties → object, items →
// array, pattern → string, minimum → number; several → any of them; none → any value).
//
// Known gaps (the grammar admits more than the schema): oneOf exclusivity, uniqueItems,
// contains, multipleOf, minProperties / maxProperties, patternProperties, propertyNames,
// dependentRequired / dependentSchemas, not, if / then / else, number bounds other than the
// sign, pattern together with minLength / maxLength (the pattern alone is applied), duplicate
// extra keys (two additional members with the same key), a surrogate pair escape counted as
// two characters by minLength. Subsets (the grammar admits fewer): the fixed member order,
// canonical const / enum / key spellings, an unanchored pattern matched as a whole (and its
// characters written raw or with their canonical escape), a schema without "type" restricted
// to the types its keywords imply, integers written without a fraction or exponent (1.0 is an
// integer to JSON Schema) and, within bounds, without "-0"; the formats' RFC 3339 variants
// ("t", " ", leap seconds).
//
// Not supported (errors): remote or anchor references; a schema that reaches itself through
// allOf parts or a $ref beside other keywords alone (those parts are expanded in place, so
// such a cycle ends in the depth error; a cycle through a property or an item is a rule);
// repetition counts above 10000; listed property names longer than 1000 characters beside
// extra members.
//
// Errors: hearth::Error "<JSON pointer of the offending keyword>: <what>", e.g.
// "/properties/age/minimum: must be a number": a keyword of the wrong type, an unknown or
// remote $ref, an unsupported pattern, minItems > maxItems (or any empty range), schemas
// nested deeper than 64 (or a document deeper than 256), a grammar of more than 10000 rules.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace hearth {

// The grammar (rule "root") for the instances of `schema`.
std::string json_schema_to_gbnf(const nlohmann::json& schema);
// Several schemas in one grammar (tool calls: one arguments schema per function): each schema's
// rules are added under names made from "s<i>", and `root` writes the root rule's body from the
// elements (rule names or atoms) standing for each schema's instances. Errors as above, prefixed
// with "schema <i>: ". `template_style`: the JSON is spaced exactly as chat templates' `tojson`
// (Python's json.dumps) writes it — ", " and ": " between tokens, no other whitespace,
// canonical escapes — so a reply's JSON comes back into the next prompt unchanged.
std::string json_schemas_to_gbnf(
    const std::vector<nlohmann::json>& schemas,
    const std::function<std::string(const std::vector<std::string>&)>& root,
    bool template_style = false);
// `text` as a GBNF literal, for such a root.
std::string gbnf_literal(std::string_view text);
// The grammar for any JSON object (response_format {"type": "json_object"}).
std::string json_object_gbnf();

}  // namespace hearth
