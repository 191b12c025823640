#include "sampling/gbnf_rules.h"

#include <cctype>

#include "util/error.h"

namespace hearth::gbnf {
namespace {

struct Primitive {
  const char* name;
  const char* body;
  std::vector<const char*> uses;
};

// Bounded whitespace: a model sampling at random cannot spin in it for ever, and the bound
// (a newline plus 20 columns of indent) still admits pretty-printed output.
const std::vector<Primitive>& primitives() {
  static const std::vector<Primitive> kAll = {
      {"ws", R"(( " " | "\n" [ \t]{0,20} )?)", {}},
      {"value",
       "object | array | string | number | boolean | null",
       {"object", "array", "string", "number", "boolean", "null"}},
      {"object", R"("{" ws ( member ( ws "," ws member )* ws )? "}")", {"ws", "member"}},
      {"member", R"(string ws ":" ws value)", {"string", "ws", "value"}},
      {"array", R"("[" ws ( value ( ws "," ws value )* ws )? "]")", {"ws", "value"}},
      {"string", R"("\"" char* "\"")", {"char"}},
      {"char", R"([^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ))", {}},
      {"number", R"("-"? int-part frac? exp?)", {"int-part", "frac", "exp"}},
      {"nonneg-number", "int-part frac? exp?", {"int-part", "frac", "exp"}},
      {"integer", R"("-"? int-part)", {"int-part"}},
      {"int-part", R"("0" | [1-9] [0-9]*)", {}},
      {"frac", R"("." [0-9]+)", {}},
      {"exp", R"([eE] [-+]? [0-9]+)", {}},
      {"boolean", R"("true" | "false")", {}},
      {"null", R"("null")", {}},
      {"date",
       R"([0-9]{4} "-" ( "0" [1-9] | "1" [0-2] ) "-" ( "0" [1-9] | [12] [0-9] | "3" [01] ))",
       {}},
      {"time",
       R"(( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{1,9} )? )"
       R"(( "Z" | [+-] ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ))",
       {}},
      {"date-time", R"(date "T" time)", {"date", "time"}},
      {"uuid",
       R"([0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" )"
       R"([0-9a-fA-F]{12})",
       {}},
      {"date-string", R"("\"" date "\"")", {"date"}},
      {"time-string", R"("\"" time "\"")", {"time"}},
      {"date-time-string", R"("\"" date-time "\"")", {"date-time"}},
      {"uuid-string", R"("\"" uuid "\"")", {"uuid"}},
      {"key-char", R"([^"\\\x00-\x1F] | key-escape)", {"key-escape"}},
      {"key-escape", R"("\\" ( ["\\bfnrt] | "u00" ( "0" [0-7bef] | "1" [0-9a-f] ) ))", {}},
  };
  return kAll;
}

const Primitive* find_primitive(std::string_view name) {
  for (const Primitive& p : primitives())
    if (name == p.name) return &p;
  return nullptr;
}

std::string sanitize(std::string_view hint) {
  std::string out;
  for (char c : hint) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) != 0;
    if (ok) {
      out.push_back(c);
    } else if (!out.empty() && out.back() != '-') {
      out.push_back('-');
    }
    if (out.size() >= 48) break;
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "rule" : out;
}

}  // namespace

std::string RuleSet::fresh_name(std::string_view hint, std::string_view where) {
  if (order_.size() >= max_rules_)
    fail("{}: the grammar would need more than {} rules", where, max_rules_);
  const std::string base = sanitize(hint);
  std::string name = base;
  // The shared rules' names and "root" are never given to generated rules.
  auto taken = [this](const std::string& n) {
    return n == "root" || used_.count(n) != 0 || find_primitive(n) != nullptr;
  };
  for (int& suffix = suffixes_[base]; taken(name);)
    name = base + "-" + std::to_string(++suffix + 1);
  used_.insert(name);
  order_.push_back(name);
  return name;
}

std::string RuleSet::add(std::string_view hint, const std::string& body, std::string_view where) {
  if (auto it = by_body_.find(body); it != by_body_.end()) return it->second;
  const std::string name = fresh_name(hint, where);
  define(name, body);
  return name;
}

std::string RuleSet::reserve(std::string_view hint, std::string_view where) {
  const std::string name = fresh_name(hint, where);
  bodies_[name] = "";
  return name;
}

void RuleSet::define(const std::string& name, const std::string& body) {
  bodies_[name] = body;
  by_body_.emplace(body, name);
}

std::string RuleSet::primitive(std::string_view name) {
  const Primitive* p = find_primitive(name);
  if (p == nullptr) fail("internal: no shared GBNF rule '{}'", name);
  if (bodies_.count(p->name) != 0) return p->name;
  std::string body = p->body;
  if (style_ == JsonStyle::Template && name == "ws") body = R"("")";
  if (style_ == JsonStyle::Template && name == "char") {
    body = find_primitive("key-char")->body;
    primitive("key-escape");
  }
  bodies_[p->name] = std::move(body);
  order_.push_back(p->name);
  for (const char* dep : p->uses) primitive(dep);
  return p->name;
}

namespace {

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

}  // namespace

std::string RuleSet::text() const {
  std::string out = "root ::= " + root_ + "\n";
  for (const std::string& name : order_) out += name + " ::= " + bodies_.at(name) + "\n";
  if (style_ == JsonStyle::Template) {
    // Every separator is written `ws "," ws` / `ws ":" ws` (a quote inside a literal is
    // escaped, so literals never hold this text): Python's json.dumps spacing instead.
    replace_all(out, R"(ws "," ws)", R"(", ")");
    replace_all(out, R"(ws ":" ws)", R"(": ")");
  }
  return out;
}

}  // namespace hearth::gbnf
