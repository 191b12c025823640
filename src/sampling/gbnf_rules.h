// The rules of a GBNF grammar under construction: fresh names, reuse of identical bodies, the
// shared JSON primitives (string, number, value, ...), a bound on the rule count, and the text.
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace hearth::gbnf {

// How JSON is spaced. Free: compact or with bounded whitespace, any escapes. Template: exactly
// as chat templates' `tojson` (Python's json.dumps) writes it: ", " and ": " between tokens,
// no other whitespace, canonical escapes, non-ASCII characters raw. A reply in that style comes
// back into the next prompt byte for byte (tool-call arguments).
enum class JsonStyle { Free, Template };

class RuleSet {
 public:
  explicit RuleSet(size_t max_rules, JsonStyle style = JsonStyle::Free)
      : max_rules_(max_rules), style_(style) {}

  // `name ::= body` under a fresh name made from `hint`, or the name of an earlier rule with the
  // same body. `where` (a schema path) prefixes the error when the rule budget is spent.
  std::string add(std::string_view hint, const std::string& body, std::string_view where);
  // A fresh name whose body comes later (define): a rule that may refer to itself.
  std::string reserve(std::string_view hint, std::string_view where);
  void define(const std::string& name, const std::string& body);
  // One of the shared rules below (with the rules it uses); returns its name.
  //   ws            optional whitespace, at most a newline and 20 spaces or tabs, or one space
  //   value object member array string char number nonneg-number integer int-part frac exp
  //   boolean null  JSON (RFC 8259), any value / object / ...
  //   date time date-time uuid (+ "-string": the same within quotes)  the string formats
  //   key-char key-escape  one character of a key as nlohmann::json writes it (canonical
  //                        escapes only), for keys that must differ from the listed ones
  std::string primitive(std::string_view name);

  void set_root(const std::string& body) { root_ = body; }
  // "root ::= ...", then the other rules in the order they were made, one per line.
  std::string text() const;
  size_t size() const { return order_.size(); }

 private:
  std::string fresh_name(std::string_view hint, std::string_view where);

  size_t max_rules_;
  JsonStyle style_;
  std::string root_;
  std::vector<std::string> order_;              // names, in creation order
  std::map<std::string, std::string> bodies_;   // name -> body ("" while reserved)
  std::map<std::string, std::string> by_body_;  // body -> name, for reuse
  std::set<std::string> used_;                  // generated names
  std::map<std::string, int> suffixes_;         // sanitized hint -> last suffix tried
};

}  // namespace hearth::gbnf
