// Objects: the listed members in a fixed order, then extra members whose keys differ from
// the listed ones.
#include <algorithm>
#include <map>
#include <memory>

#include "sampling/gbnf_text.h"
#include "sampling/json_schema_converter.h"
#include "util/error.h"

namespace hearth::gbnf {
namespace {

const std::string kSep = R"(ws "," ws)";
constexpr size_t kMaxKeyLength = 1000;
constexpr size_t kKeyNesting = 8;

std::string member(const std::string& key_json, const std::string& value) {
  return literal(key_json) + R"( ws ":" ws )" + value;
}

// The units of a key as nlohmann::json writes it (between the quotes): one raw character, or
// one escape (\" \\ \b \f \n \r \t \u00xx).
std::vector<std::string> key_units(std::string_view text) {
  std::vector<std::string> out;
  for (size_t i = 0; i < text.size();) {
    size_t n = 1;
    const auto b = static_cast<unsigned char>(text[i]);
    if (text[i] == '\\') {
      n = i + 1 < text.size() && text[i + 1] == 'u' ? 6 : 2;
    } else if (b >= 0xF0) {
      n = 4;
    } else if (b >= 0xE0) {
      n = 3;
    } else if (b >= 0xC0) {
      n = 2;
    }
    n = std::min(n, text.size() - i);
    out.emplace_back(text.substr(i, n));
    i += n;
  }
  return out;
}

// A trie of the listed keys' units.
struct KeyTrie {
  bool terminal = false;
  std::map<std::string, std::unique_ptr<KeyTrie>> children;
};

// Every canonical escape unit, as json_escape writes them.
std::vector<std::string> all_escapes() {
  std::vector<std::string> out;
  for (uint32_t cp = 0; cp < 0x20; ++cp) out.push_back(*json_escape(cp));
  out.push_back(*json_escape('"'));
  out.push_back(*json_escape('\\'));
  return out;
}

}  // namespace

// Keys other than `keys` (their JSON text, quotes included), within quotes. Per trie node
// (a prefix of some listed key) the rule admits: the end, unless the prefix is a listed key;
// a child's unit followed by that child's rule; any other unit followed by anything.
std::string SchemaConverter::other_key(const std::vector<std::string>& keys,
                                       const std::string& hint, const std::string& path) {
  static const std::string kQuote = literal("\"");
  if (keys.empty()) return rules_.primitive("string");
  KeyTrie root;
  for (const std::string& k : keys) {
    KeyTrie* node = &root;
    const std::vector<std::string> units = key_units(std::string_view(k).substr(1, k.size() - 2));
    // The rules below recurse once per character; a bound keeps that off the stack's limit.
    if (units.size() > kMaxKeyLength)
      fail(
          "{}: a property name longer than {} characters beside additionalProperties is not "
          "supported",
          where(path), kMaxKeyLength);
    for (const std::string& u : units) {
      auto& child = node->children[u];
      if (!child) child = std::make_unique<KeyTrie>();
      node = child.get();
    }
    node->terminal = true;
  }
  const std::string any_tail = rules_.primitive("key-char") + "*";
  static const CpSet kRaw = {{0x20, 0x21}, {0x23, 0x5B}, {0x5D, kMaxCodePoint}};
  // Depth-first; returns an element for the node's suffixes. Nodes are written inline, in
  // nested parentheses, except every kKeyNesting levels, where the node gets a rule: few rules,
  // and nesting that stays within what grammar parsers accept.
  auto suffixes = [&](auto& self, const KeyTrie& node, size_t level) -> std::string {
    if (node.children.empty()) return rules_.primitive("key-char") + "+";
    std::vector<std::string> alts;
    CpSet raw_taken;
    std::vector<std::string> escapes_taken;
    for (const auto& [unit, child] : node.children) {
      alts.push_back(literal(unit) + " " + self(self, *child, level + 1));
      if (unit[0] == '\\') {
        escapes_taken.push_back(unit);
      } else if (auto cps = decode_utf8(unit); cps && cps->size() == 1) {
        raw_taken.push_back({(*cps)[0], (*cps)[0]});
      }
    }
    std::vector<std::string> others;
    const CpSet raw = cp_intersect(kRaw, cp_complement(raw_taken));
    if (!raw.empty()) others.push_back(char_class(raw));
    if (escapes_taken.empty()) {
      others.push_back(rules_.primitive("key-escape"));
    } else {
      for (const std::string& e : all_escapes())
        if (std::find(escapes_taken.begin(), escapes_taken.end(), e) == escapes_taken.end())
          others.push_back(literal(e));
    }
    std::string other = others[0];
    for (size_t i = 1; i < others.size(); ++i) other += " | " + others[i];
    alts.push_back("( " + other + " ) " + any_tail);
    std::string body = alts[0];
    for (size_t i = 1; i < alts.size(); ++i) body += " | " + alts[i];
    body = "( " + body + (node.terminal ? " )" : " )?");
    if (level % kKeyNesting != 0) return body;
    return rules_.add(child_hint(hint, "key"), body, where(path));
  };
  return rules_.add(child_hint(hint, "other-key"),
                    kQuote + " " + suffixes(suffixes, root, 0) + " " + kQuote, where(path));
}

// The members inside the braces (not empty when `required` is not): the required ones in
// order, each optional one or not in order, then any number of extras.
std::string SchemaConverter::members(const std::vector<std::string>& required,
                                     const std::vector<std::string>& optional,
                                     const std::optional<std::string>& extra,
                                     const std::string& hint, const std::string& path) {
  const std::string extras = extra ? "( " + kSep + " " + *extra + " )*" : "";
  auto seq = [](std::string a, const std::string& b) {
    return a.empty() ? b : (b.empty() ? a : a + " " + b);
  };
  if (!required.empty()) {
    std::string out = required[0];
    for (size_t i = 1; i < required.size(); ++i) out = seq(out, kSep + " " + required[i]);
    for (const std::string& o : optional) out = seq(out, "( " + kSep + " " + o + " )?");
    return seq(out, extras);
  }
  // No required member: the first one present is some optional member (then the later
  // optional ones, each present or not) or an extra one. tails[i]: what may follow the
  // optional member i; a rule of its own when shared by many alternatives.
  std::vector<std::string> tails(optional.size() + 1);
  tails[optional.size()] = extras;
  for (size_t i = optional.size(); i-- > 0;) {
    std::string t = seq("( " + kSep + " " + optional[i] + " )?", tails[i + 1]);
    tails[i] = optional.size() > 4 ? rules_.add(child_hint(hint, "rest"), t, where(path)) : t;
  }
  std::vector<std::string> firsts;
  for (size_t i = 0; i < optional.size(); ++i) firsts.push_back(seq(optional[i], tails[i + 1]));
  if (extra) firsts.push_back(seq(*extra, extras));
  std::string out;
  for (size_t i = 0; i < firsts.size(); ++i) out += (i ? " | " : "") + firsts[i];
  return out;
}

std::string SchemaConverter::visit_object(const json& s, const std::string& path,
                                          const std::string& hint, int depth) {
  const json props = s.value("properties", json::object());
  if (!props.is_object()) fail("{}: must be an object", child_path(path, "properties"));
  const json req = s.value("required", json::array());
  if (!req.is_array()) fail("{}: must be an array of strings", child_path(path, "required"));
  std::vector<std::string> required_names;
  for (const json& r : req) {
    if (!r.is_string()) fail("{}: must be an array of strings", child_path(path, "required"));
    if (std::find(required_names.begin(), required_names.end(), r) == required_names.end())
      required_names.push_back(r.get<std::string>());
  }
  const json additional = s.value("additionalProperties", json(true));
  const std::string ap_path = child_path(path, "additionalProperties");
  if (!additional.is_boolean() && !additional.is_object())
    fail("{}: must be a boolean or a schema", ap_path);
  if (props.empty() && required_names.empty() && additional == true)
    return rules_.primitive("object");

  StructureScope scope(structure_);
  auto is_required = [&](const std::string& name) {
    return std::find(required_names.begin(), required_names.end(), name) != required_names.end();
  };
  std::vector<std::string> required, optional, keys;
  for (const auto& [name, sub] : props.items()) {
    const std::string at = child_path(child_path(path, "properties"), name);
    keys.push_back(dump_json(name, at));
    if (sub == false) {  // the member must be absent
      if (is_required(name)) fail("{}: required, but its schema is false", at);
      continue;
    }
    const std::string value = visit(sub, at, child_hint(hint, name), depth + 1);
    (is_required(name) ? required : optional).push_back(member(keys.back(), value));
  }
  // Required names without a schema of their own are extra members that must be there.
  std::optional<std::string> extra_value;
  auto extra_value_expr = [&]() -> const std::string& {
    if (!extra_value)
      extra_value = additional.is_object()
                        ? visit(additional, ap_path, child_hint(hint, "extra"), depth + 1)
                        : rules_.primitive("value");
    return *extra_value;
  };
  for (const std::string& name : required_names) {
    if (props.contains(name)) continue;
    if (additional == false)
      fail(
          "{}: '{}' is required, but additionalProperties is false and properties does not "
          "list it",
          child_path(path, "required"), name);
    keys.push_back(dump_json(name, child_path(path, "required")));
    required.push_back(member(keys.back(), extra_value_expr()));
  }
  std::optional<std::string> extra;
  if (additional != false) {
    const std::string key = other_key(keys, hint, path);
    extra = key + R"( ws ":" ws )" + extra_value_expr();
  }
  const std::string inner = members(required, optional, extra, hint, path);
  const std::string ws = rules_.primitive("ws");
  if (inner.empty()) return R"("{" )" + ws + R"( "}")";
  if (!required.empty()) return R"("{" )" + ws + " " + inner + " " + ws + R"( "}")";
  return R"("{" )" + ws + " ( " + atom(inner) + " " + ws + R"( )? "}")";
}

}  // namespace hearth::gbnf
