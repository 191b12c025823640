#include "sampling/json_schema_grammar.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "sampling/gbnf_text.h"
#include "sampling/json_schema_converter.h"
#include "sampling/schema_merge.h"
#include "util/error.h"

namespace hearth {
namespace gbnf {
namespace {

// JSON nesting beyond which the document is refused before any visit: dump() and operator==
// recurse through values (const, enum, allOf's comparisons), so a deep one could exhaust the
// stack.
constexpr int kMaxJsonDepth = 256;

bool too_deep(const json& j, int depth, std::string& path) {
  if (depth > kMaxJsonDepth) return true;
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      if (too_deep(v, depth + 1, path)) {
        path = child_path("", k) + path;
        return true;
      }
    }
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) {
      if (too_deep(j[i], depth + 1, path)) {
        path = std::string("/") + std::to_string(i) + path;
        return true;
      }
    }
  }
  return false;
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? std::string(sep) : "") + parts[i];
  return out;
}

const std::vector<std::string>& known_types() {
  static const std::vector<std::string> kTypes = {"null",   "boolean", "object", "array",
                                                  "string", "number",  "integer"};
  return kTypes;
}

// The types a schema without "type" is taken to mean, from the keywords it has.
std::vector<std::string> inferred_types(const json& s) {
  static const std::vector<std::pair<const char*, std::vector<const char*>>> kByType = {
      {"object",
       {"properties", "required", "additionalProperties", "patternProperties", "minProperties",
        "maxProperties", "propertyNames", "dependentRequired"}},
      {"array",
       {"items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems",
        "contains"}},
      {"string", {"minLength", "maxLength", "pattern", "format"}},
      {"number", {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}},
  };
  std::vector<std::string> out;
  for (const auto& [type, keys] : kByType)
    if (std::any_of(keys.begin(), keys.end(), [&](const char* k) { return s.contains(k); }))
      out.push_back(type);
  return out;
}

}  // namespace

std::string child_hint(const std::string& hint, std::string_view part) {
  return hint == "root" ? std::string(part) : hint + "-" + std::string(part);
}

std::string where(const std::string& path) {
  return path.empty() ? "(root)" : path;
}

std::string child_path(const std::string& path, std::string_view token) {
  std::string out = path + "/";
  for (char c : token) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string dump_json(const json& v, const std::string& path) {
  try {
    return v.dump(-1, ' ', false, json::error_handler_t::strict);
  } catch (const json::exception&) {
    fail("{}: a string is not valid UTF-8", where(path));
  }
}

std::optional<uint64_t> count_keyword(const json& s, const char* key, const std::string& path) {
  if (!s.contains(key)) return std::nullopt;
  const json& v = s[key];
  const bool integral = v.is_number_unsigned() ||
                        (v.is_number_integer() && v.get<int64_t>() >= 0) ||
                        (v.is_number_float() && v.get<double>() >= 0 &&
                         std::floor(v.get<double>()) == v.get<double>());
  if (!integral) fail("{}: must be a non-negative integer", child_path(path, key));
  if (v.is_number_float()) return static_cast<uint64_t>(std::min(v.get<double>(), 1e18));
  return v.get<uint64_t>();
}

std::optional<std::string> string_keyword(const json& s, const char* key, const std::string& path) {
  if (!s.contains(key)) return std::nullopt;
  if (!s[key].is_string()) fail("{}: must be a string", child_path(path, key));
  return s[key].get<std::string>();
}

std::vector<std::string> type_names(const json& s, const std::string& path) {
  if (!s.contains("type")) return {};
  const json& t = s["type"];
  const std::string at = child_path(path, "type");
  std::vector<std::string> out;
  const json list = t.is_array() ? t : json::array({t});
  for (const json& e : list) {
    if (!e.is_string()) fail("{}: must be a type name or an array of them", at);
    const std::string name = e.get<std::string>();
    const auto& known = known_types();
    if (std::find(known.begin(), known.end(), name) == known.end())
      fail("{}: unknown type '{}'", at, name);
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  }
  if (out.empty()) fail("{}: an empty list of types matches nothing", at);
  return out;
}

bool has_type(const json& v, const std::string& type) {
  if (type == "null") return v.is_null();
  if (type == "boolean") return v.is_boolean();
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "number") return v.is_number();
  if (type == "integer")
    return v.is_number_integer() ||
           (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
  return false;
}

std::string SchemaConverter::convert() {
  std::string deep;
  if (too_deep(root_, 0, deep))
    fail("{}: the schema document is nested deeper than {} levels", where(deep), kMaxJsonDepth);
  rules_.set_root(body(root_, "", "root", 0));
  return rules_.text();
}

std::string SchemaConverter::convert_part(const std::string& hint) {
  std::string deep;
  if (too_deep(root_, 0, deep))
    fail("{}: the schema document is nested deeper than {} levels", where(deep), kMaxJsonDepth);
  return visit(root_, "", hint, 0);
}

std::string SchemaConverter::visit(const json& s, const std::string& path, const std::string& hint,
                                   int depth) {
  const std::string e = body(s, path, hint, depth);
  return is_atom(e) ? e : rules_.add(hint, e, where(path));
}

std::string SchemaConverter::body(const json& s, const std::string& path, const std::string& hint,
                                  int depth) {
  if (++visits_ > kMaxVisits)
    fail("{}: the schema is too complex (more than {} subschemas to visit)", where(path),
         kMaxVisits);
  if (depth > kMaxSchemaDepth)
    fail("{}: schemas nested deeper than {}", where(path), kMaxSchemaDepth);
  if (s.is_boolean()) {
    if (s.get<bool>()) return rules_.primitive("value");
    fail("{}: the schema false matches nothing", where(path));
  }
  if (!s.is_object()) fail("{}: a schema must be an object or a boolean", where(path));
  if (s.contains("$ref")) {
    bool siblings = false;
    for (auto it = s.begin(); it != s.end(); ++it)
      siblings = siblings || (it.key() != "$ref" && !is_annotation_keyword(it.key()));
    // $ref beside other keywords means both apply (draft 2019-09 on): an allOf.
    if (siblings) return visit_all_of(s, path, hint, depth);
    return visit_ref(s["$ref"], child_path(path, "$ref"), depth);
  }
  if (s.contains("allOf")) return visit_all_of(s, path, hint, depth);
  if (s.contains("anyOf") || s.contains("oneOf")) return visit_any_of(s, path, hint, depth);
  if (s.contains("const")) return visit_const(s, path);
  if (s.contains("enum")) return visit_enum(s, path);
  return visit_types(s, path, hint, depth);
}

std::pair<const json*, std::string> SchemaConverter::resolve_ref(const json& ref,
                                                                 const std::string& path) {
  if (!ref.is_string()) fail("{}: must be a string", path);
  const std::string r = ref.get<std::string>();
  if (r != "#" && r.rfind("#/", 0) != 0)
    fail("{}: '{}' is not a local reference (only \"#\" and \"#/...\" are supported)", path, r);
  const std::string pointer = r.substr(1);
  try {
    const json::json_pointer p(pointer);
    if (root_.contains(p)) return {&root_.at(p), pointer};
  } catch (const json::exception&) {
    // a malformed pointer or a non-numeric array index: reported as not found below
  }
  fail("{}: '{}' does not resolve within the schema", path, r);
}

std::string SchemaConverter::visit_ref(const json& ref, const std::string& path, int depth) {
  const auto [target, target_path] = resolve_ref(ref, path);
  const std::string key = ref.get<std::string>();
  if (auto it = refs_.find(key); it != refs_.end()) {
    if (it->second.in_progress && it->second.structure == structure_)
      fail("{}: '{}' refers back to itself with no object or array in between", path, key);
    return it->second.name;
  }
  const size_t slash = key.rfind('/');
  const std::string hint = slash == std::string::npos ? "ref" : key.substr(slash + 1);
  const std::string name = rules_.reserve(hint, path);
  refs_[key] = RefRule{name, true, structure_};
  const std::string e = body(*target, target_path, name, depth + 1);
  rules_.define(name, e);
  refs_[key].in_progress = false;
  return name;
}

// allOf's parts, each with $ref replaced by its target: `s` without its allOf / $ref, then
// what they lead to.
void SchemaConverter::flatten_all_of(const json& s, const std::string& path, int depth,
                                     std::vector<json>& out) {
  if (++visits_ > kMaxVisits || depth > kMaxSchemaDepth)
    fail("{}: schemas nested deeper than {} (or too many to visit)", where(path), kMaxSchemaDepth);
  if (s.is_boolean()) {
    if (s.get<bool>()) return;
    fail("{}: the schema false matches nothing", where(path));
  }
  if (!s.is_object()) fail("{}: a schema must be an object or a boolean", where(path));
  if (s.contains("$ref")) {
    const auto [target, target_path] = resolve_ref(s["$ref"], child_path(path, "$ref"));
    flatten_all_of(*target, target_path, depth + 1, out);
  }
  if (s.contains("allOf")) {
    const json& parts = s["allOf"];
    if (!parts.is_array() || parts.empty())
      fail("{}: must be a non-empty array of schemas", child_path(path, "allOf"));
    for (size_t i = 0; i < parts.size(); ++i)
      flatten_all_of(parts[i], child_path(child_path(path, "allOf"), std::to_string(i)), depth + 1,
                     out);
  }
  json rest = s;
  rest.erase("$ref");
  rest.erase("allOf");
  out.push_back(std::move(rest));
}

std::string SchemaConverter::visit_all_of(const json& s, const std::string& path,
                                          const std::string& hint, int depth) {
  std::vector<json> parts;
  flatten_all_of(s, path, depth, parts);
  const std::string at = child_path(path, s.contains("allOf") ? "allOf" : "$ref");
  return body(merge_all_of(parts, at), at, hint, depth + 1);
}

std::string SchemaConverter::visit_any_of(const json& s, const std::string& path,
                                          const std::string& hint, int depth) {
  if (s.contains("anyOf") && s.contains("oneOf"))
    fail("{}: anyOf beside oneOf is not supported", child_path(path, "oneOf"));
  const char* key = s.contains("anyOf") ? "anyOf" : "oneOf";
  const std::string at = child_path(path, key);
  const json& alts = s[key];
  if (!alts.is_array() || alts.empty()) fail("{}: must be a non-empty array of schemas", at);
  // Keywords beside anyOf apply to every alternative: each becomes allOf [those, alternative].
  json rest = s;
  rest.erase(key);
  for (auto it = rest.begin(); it != rest.end();)
    it = is_annotation_keyword(it.key()) ? rest.erase(it) : std::next(it);
  std::vector<std::string> exprs;
  for (size_t i = 0; i < alts.size(); ++i) {
    const std::string alt_path = child_path(at, std::to_string(i));
    const std::string alt_hint = child_hint(hint, std::string("alt-") + std::to_string(i));
    const std::string e = rest.empty() ? visit(alts[i], alt_path, alt_hint, depth + 1)
                                       : visit(json{{"allOf", json::array({rest, alts[i]})}},
                                               alt_path, alt_hint, depth + 1);
    if (std::find(exprs.begin(), exprs.end(), e) == exprs.end()) exprs.push_back(e);
  }
  return join(exprs, " | ");
}

std::string SchemaConverter::visit_const(const json& s, const std::string& path) {
  const json& v = s["const"];
  const std::vector<std::string> types = type_names(s, path);
  const bool typed = types.empty() || std::any_of(types.begin(), types.end(),
                                                  [&](const auto& t) { return has_type(v, t); });
  if (!typed) fail("{}: the value is not of the schema's type", child_path(path, "const"));
  if (s.contains("enum") && s["enum"].is_array()) {
    const json& e = s["enum"];
    if (std::find(e.begin(), e.end(), v) == e.end())
      fail("{}: the value is not one of enum's", child_path(path, "const"));
  }
  return literal(dump_json(v, child_path(path, "const")));
}

std::string SchemaConverter::visit_enum(const json& s, const std::string& path) {
  const std::string at = child_path(path, "enum");
  const json& values = s["enum"];
  if (!values.is_array() || values.empty()) fail("{}: must be a non-empty array", at);
  const std::vector<std::string> types = type_names(s, path);
  std::vector<std::string> texts;  // the values as JSON text
  for (size_t i = 0; i < values.size(); ++i) {
    const json& v = values[i];
    // Values of another type than "type" allows are not instances: left out.
    const bool typed = types.empty() || std::any_of(types.begin(), types.end(),
                                                    [&](const auto& t) { return has_type(v, t); });
    if (typed) texts.push_back(dump_json(v, child_path(at, std::to_string(i))));
  }
  if (texts.empty()) fail("{}: no value is of the schema's type", at);
  return literal_alternatives(std::move(texts));
}

std::string SchemaConverter::visit_types(const json& s, const std::string& path,
                                         const std::string& hint, int depth) {
  std::vector<std::string> types = type_names(s, path);
  if (types.empty()) types = inferred_types(s);
  if (types.empty()) return rules_.primitive("value");
  // "number" already admits every integer.
  if (std::find(types.begin(), types.end(), "number") != types.end())
    std::erase(types, std::string("integer"));
  std::vector<std::string> alts;
  for (const std::string& t : types) {
    // The alternatives' rules are named "<hint>-<type>" ("root-string", not "string", which is
    // the shared rule's name).
    const std::string h = types.size() > 1 ? hint + "-" + t : hint;
    const std::string e = visit_type(t, s, path, h, depth);
    alts.push_back(types.size() > 1 && !is_atom(e) ? rules_.add(h, e, where(path)) : e);
  }
  return join(alts, " | ");
}

std::string SchemaConverter::visit_type(const std::string& type, const json& s,
                                        const std::string& path, const std::string& hint,
                                        int depth) {
  if (type == "null") return rules_.primitive("null");
  if (type == "boolean") return rules_.primitive("boolean");
  if (type == "string") return visit_string(s, path);
  if (type == "integer") return visit_integer(s, path);
  if (type == "number") return visit_number(s, path);
  if (type == "object") return visit_object(s, path, hint, depth);
  return visit_array(s, path, hint, depth);
}

}  // namespace gbnf

std::string json_schema_to_gbnf(const nlohmann::json& schema) {
  return gbnf::SchemaConverter(schema).convert();
}

std::string json_schemas_to_gbnf(
    const std::vector<nlohmann::json>& schemas,
    const std::function<std::string(const std::vector<std::string>&)>& root, bool template_style) {
  gbnf::RuleSet rules(gbnf::kMaxRules,
                      template_style ? gbnf::JsonStyle::Template : gbnf::JsonStyle::Free);
  std::vector<std::string> elements;
  for (size_t i = 0; i < schemas.size(); ++i) {
    try {
      elements.push_back(
          gbnf::SchemaConverter(schemas[i], rules).convert_part(fmt::format("s{}", i)));
    } catch (const Error& e) {
      throw Error(fmt::format("schema {}: {}", i, e.what()));
    }
  }
  rules.set_root(root(elements));
  return rules.text();
}

std::string gbnf_literal(std::string_view text) {
  return gbnf::literal(text);
}

std::string json_object_gbnf() {
  gbnf::RuleSet rules(gbnf::kMaxRules);
  rules.set_root(rules.primitive("object"));
  return rules.text();
}

}  // namespace hearth
