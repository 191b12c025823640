#include "sampling/schema_merge.h"

#include <algorithm>
#include <set>
#include <string>

#include "util/error.h"

namespace hearth::gbnf {

using nlohmann::json;

bool is_annotation_keyword(std::string_view key) {
  static const std::set<std::string, std::less<>> kAnnotations = {
      "title",    "description", "default",    "examples",        "$comment",
      "$schema",  "$id",         "$anchor",    "$defs",           "definitions",
      "readOnly", "writeOnly",   "deprecated", "contentEncoding", "contentMediaType"};
  return kAnnotations.count(key) != 0;
}

namespace {

bool is_min_keyword(std::string_view k) {
  return k == "minimum" || k == "exclusiveMinimum" || k == "minLength" || k == "minItems" ||
         k == "minProperties";
}

bool is_max_keyword(std::string_view k) {
  return k == "maximum" || k == "exclusiveMaximum" || k == "maxLength" || k == "maxItems" ||
         k == "maxProperties";
}

std::set<std::string> type_set(const json& t, std::string_view where) {
  std::set<std::string> out;
  if (t.is_string()) {
    out.insert(t.get<std::string>());
  } else if (t.is_array()) {
    for (const json& e : t) {
      if (!e.is_string()) fail("{}/type: must be a string or an array of strings", where);
      out.insert(e.get<std::string>());
    }
  } else {
    fail("{}/type: must be a string or an array of strings", where);
  }
  return out;
}

json merge_types(const json& a, const json& b, std::string_view where) {
  const std::set<std::string> ta = type_set(a, where), tb = type_set(b, where);
  json out = json::array();
  for (const std::string& t : ta) {
    // "integer" is a subset of "number": their intersection is "integer".
    const bool in_b = tb.count(t) != 0 || (t == "integer" && tb.count("number") != 0);
    if (in_b) out.push_back(t);
  }
  for (const std::string& t : tb)
    if (t == "integer" && ta.count("number") != 0 && ta.count("integer") == 0) out.push_back(t);
  if (out.empty()) fail("{}: the parts' types have nothing in common", where);
  return out.size() == 1 ? out[0] : out;
}

json merge_enums(const json& a, const json& b, std::string_view where) {
  if (!a.is_array() || !b.is_array()) fail("{}/enum: must be an array", where);
  json out = json::array();
  for (const json& v : a)
    if (std::find(b.begin(), b.end(), v) != b.end()) out.push_back(v);
  if (out.empty()) fail("{}: the parts' enums have no value in common", where);
  return out;
}

// Merges one keyword's value from a further part into `out`.
void merge_keyword(json& out, const std::string& k, const json& v, std::string_view where) {
  if (!out.contains(k)) {
    out[k] = v;
    return;
  }
  json& cur = out[k];
  if (cur == v) return;
  if (k == "type") {
    cur = merge_types(cur, v, where);
  } else if (k == "enum") {
    cur = merge_enums(cur, v, where);
  } else if (k == "required") {
    if (!cur.is_array() || !v.is_array()) fail("{}/required: must be an array", where);
    for (const json& name : v)
      if (std::find(cur.begin(), cur.end(), name) == cur.end()) cur.push_back(name);
  } else if (k == "properties") {
    if (!cur.is_object() || !v.is_object()) fail("{}/properties: must be an object", where);
    for (const auto& [name, schema] : v.items()) {
      if (!cur.contains(name)) {
        cur[name] = schema;
      } else if (cur[name] != schema) {
        cur[name] = json{{"allOf", json::array({cur[name], schema})}};
      }
    }
  } else if ((is_min_keyword(k) || is_max_keyword(k)) && cur.is_number() && v.is_number()) {
    const bool take_v = is_min_keyword(k) ? v.get<double>() > cur.get<double>()
                                          : v.get<double>() < cur.get<double>();
    if (take_v) cur = v;
  } else {
    fail("{}: the parts give '{}' different values, which is not supported", where, k);
  }
}

// additionalProperties across parts: each part's `false` or schema applies to every property
// of the merged object that the part itself does not list.
void merge_additional(json& out, const std::vector<json>& parts, std::string_view where) {
  std::set<std::string> excluded;
  json extra = json::array();  // the parts' additionalProperties schemas
  bool any_false = false;
  for (const json& p : parts) {
    if (!p.contains("additionalProperties")) continue;
    const json& ap = p["additionalProperties"];
    if (ap == true) continue;
    if (!ap.is_boolean() && !ap.is_object())
      fail("{}/additionalProperties: must be a boolean or a schema", where);
    any_false = any_false || ap == false;
    if (ap.is_object()) extra.push_back(ap);
    if (!out.contains("properties")) continue;
    const json own = p.value("properties", json::object());
    for (auto& [name, schema] : out["properties"].items()) {
      if (own.is_object() && own.contains(name)) continue;
      if (ap == false) {
        excluded.insert(name);
      } else {
        schema = json{{"allOf", json::array({schema, ap})}};
      }
    }
  }
  for (const std::string& name : excluded) {
    const json req = out.value("required", json::array());
    if (std::find(req.begin(), req.end(), json(name)) != req.end())
      fail("{}: '{}' is required, but a part's additionalProperties false excludes it", where,
           name);
    out["properties"].erase(name);
  }
  out.erase("additionalProperties");
  if (any_false) {
    out["additionalProperties"] = false;
  } else if (extra.size() == 1) {
    out["additionalProperties"] = extra[0];
  } else if (extra.size() > 1) {
    out["additionalProperties"] = json{{"allOf", extra}};
  }
}

}  // namespace

json merge_all_of(const std::vector<json>& parts, std::string_view where) {
  json out = json::object();
  for (const json& p : parts) {
    for (const auto& [k, v] : p.items()) {
      if (is_annotation_keyword(k) || k == "additionalProperties") continue;
      if ((k == "anyOf" || k == "oneOf") && (out.contains("anyOf") || out.contains("oneOf")))
        fail("{}: more than one part with anyOf / oneOf is not supported", where);
      merge_keyword(out, k, v, where);
    }
  }
  merge_additional(out, parts, where);
  return out;
}

}  // namespace hearth::gbnf
