// The JSON Schema converter's state and visitors (internal to json_schema_*.cpp; the API is
// sampling/json_schema_grammar.h).
//
// visit() turns a schema into one GBNF element (a rule name or a literal), adding the rules it
// needs; body() gives the expression itself. Paths are JSON pointers into the schema document,
// used in error messages and (through `hint`) in rule names.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sampling/gbnf_rules.h"

namespace hearth::gbnf {

using nlohmann::json;

inline constexpr int kMaxSchemaDepth = 64;
inline constexpr size_t kMaxRules = 10000;
// Subschemas visited: allOf / anyOf can visit one subschema many times, and a grammar within
// the rule budget can still cost this much work to build.
inline constexpr size_t kMaxVisits = 50000;

// A path for messages: the pointer itself, or "(root)" for the empty one.
std::string where(const std::string& path);
// `path` extended by one reference token (escaped: ~ → ~0, / → ~1).
std::string child_path(const std::string& path, std::string_view token);
// A rule-name hint for a part of `hint`'s schema (the root's parts go without a prefix).
std::string child_hint(const std::string& hint, std::string_view part);
// nlohmann::json's text for `v`; a hearth::Error at `path` for invalid UTF-8.
std::string dump_json(const json& v, const std::string& path);

class SchemaConverter {
 public:
  explicit SchemaConverter(const json& root) : root_(root), own_rules_(kMaxRules) {}
  // Adds its rules to `rules` (shared by several schemas' converters).
  SchemaConverter(const json& root, RuleSet& rules)
      : root_(root), own_rules_(0), shared_rules_(&rules) {}
  // The whole grammar, the schema's instances at its root.
  std::string convert();
  // Adds the schema's rules; returns the element (a rule name or an atom) for its instances,
  // its rules named from `hint`.
  std::string convert_part(const std::string& hint);

  // Schema visitors (json_schema_grammar.cpp).
  std::string visit(const json& s, const std::string& path, const std::string& hint, int depth);
  std::string body(const json& s, const std::string& path, const std::string& hint, int depth);

 private:
  struct RefRule {
    std::string name;
    bool in_progress = true;
    int structure = 0;  // structure_ when its visit began
  };
  // Counts the objects and arrays being visited: a reference met again inside one of them
  // recurses after some text ("{", "["), one met at the same count is left recursion.
  struct StructureScope {
    explicit StructureScope(int& n) : n_(n) { ++n_; }
    ~StructureScope() { --n_; }
    int& n_;
  };

  std::string visit_ref(const json& ref, const std::string& path, int depth);
  std::pair<const json*, std::string> resolve_ref(const json& ref, const std::string& path);
  std::string visit_all_of(const json& s, const std::string& path, const std::string& hint,
                           int depth);
  void flatten_all_of(const json& s, const std::string& path, int depth, std::vector<json>& out);
  std::string visit_any_of(const json& s, const std::string& path, const std::string& hint,
                           int depth);
  std::string visit_const(const json& s, const std::string& path);
  std::string visit_enum(const json& s, const std::string& path);
  std::string visit_types(const json& s, const std::string& path, const std::string& hint,
                          int depth);
  std::string visit_type(const std::string& type, const json& s, const std::string& path,
                         const std::string& hint, int depth);

  // Scalars (json_schema_scalars.cpp).
  std::string visit_string(const json& s, const std::string& path);
  std::string visit_integer(const json& s, const std::string& path);
  std::string visit_number(const json& s, const std::string& path);

  // Objects (json_schema_objects.cpp).
  std::string visit_object(const json& s, const std::string& path, const std::string& hint,
                           int depth);
  std::string other_key(const std::vector<std::string>& keys, const std::string& hint,
                        const std::string& path);
  std::string members(const std::vector<std::string>& required,
                      const std::vector<std::string>& optional,
                      const std::optional<std::string>& extra, const std::string& hint,
                      const std::string& path);

  // Arrays (json_schema_arrays.cpp).
  std::string visit_array(const json& s, const std::string& path, const std::string& hint,
                          int depth);
  std::string elements(std::vector<std::string> prefix, const std::optional<std::string>& rest,
                       uint64_t min, std::optional<uint64_t> max, const std::string& hint,
                       const std::string& path);

  const json& root_;
  RuleSet own_rules_;
  RuleSet* shared_rules_ = nullptr;
  RuleSet& rules_ = shared_rules_ ? *shared_rules_ : own_rules_;
  std::map<std::string, RefRule> refs_;  // by the $ref string
  int structure_ = 0;
  size_t visits_ = 0;
};

// Keyword readers: a hearth::Error naming `path`/`key` when the value has the wrong type.
// A non-negative integer count (minItems, maxLength, ...), nullopt when absent.
std::optional<uint64_t> count_keyword(const json& s, const char* key, const std::string& path);
// A string keyword, nullopt when absent.
std::optional<std::string> string_keyword(const json& s, const char* key, const std::string& path);
// The "type" keyword's names (validated), empty when absent.
std::vector<std::string> type_names(const json& s, const std::string& path);
// Whether `v` is an instance of JSON Schema type `type`.
bool has_type(const json& v, const std::string& type);

}  // namespace hearth::gbnf
