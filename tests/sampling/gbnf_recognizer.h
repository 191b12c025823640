// TEST-ONLY: a small GBNF recognizer, to check what the JSON Schema converter's grammars accept
// while the real grammar engine is written elsewhere. It is not the engine and is not built
// into hearth: no token masks, no incremental state, no care for speed.
//
// It parses llama-server's GBNF dialect (rules `name ::= ...`, "literals" with the escapes
// \n \r \t \" \\ \xHH \uHHHH, [classes] and [^negated] ones with ranges, `.`, ( groups ), |,
// * + ? {m} {m,} {m,n}, # comments) and decides whether a whole input, decoded from UTF-8 into
// code points (as llama.cpp's engine matches), derives from `root`. Matching is a memoized
// search over (rule, position) → the set of end positions, so ambiguity costs nothing; left
// recursion is reported as an error (std::runtime_error), as are undefined or duplicate rules,
// escapes llama.cpp's parser does not know, and groups nested deeper than 64.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hearth::test {

class GbnfRecognizer {
 public:
  explicit GbnfRecognizer(std::string_view grammar) : src_(grammar) { parse_grammar(); }

  bool accepts(std::string_view text) const {
    std::optional<std::vector<uint32_t>> cps = decode(text);
    if (!cps) return false;
    input_ = std::move(*cps);
    memo_.clear();
    busy_.clear();
    const std::set<size_t> ends = rule_ends(root_, 0);
    return ends.count(input_.size()) != 0;
  }

  size_t rule_count() const { return rules_.size(); }

 private:
  enum class Kind { Seq, Alt, Lit, Class, Any, Ref, Repeat };
  struct Node {
    Kind kind = Kind::Seq;
    std::vector<Node> kids;
    std::vector<uint32_t> text;                         // Lit
    std::vector<std::pair<uint32_t, uint32_t>> ranges;  // Class
    bool negated = false;                               // Class
    size_t rule = 0;                                    // Ref
    uint64_t lo = 0;                                    // Repeat
    std::optional<uint64_t> hi;                         // Repeat
  };

  [[noreturn]] void error(const std::string& what) const {
    throw std::runtime_error("gbnf: " + what + " at offset " + std::to_string(pos_));
  }

  static std::optional<std::vector<uint32_t>> decode(std::string_view s) {
    std::vector<uint32_t> out;
    for (size_t i = 0; i < s.size();) {
      const auto b = static_cast<unsigned char>(s[i]);
      size_t n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
      if (n == 0 || i + n > s.size()) return std::nullopt;
      uint32_t cp = n == 1 ? b : (b & (0x7F >> n));
      for (size_t k = 1; k < n; ++k) {
        const auto c = static_cast<unsigned char>(s[i + k]);
        if ((c >> 6) != 2) return std::nullopt;
        cp = (cp << 6) | (c & 0x3F);
      }
      out.push_back(cp);
      i += n;
    }
    return out;
  }

  // --- parsing -------------------------------------------------------------------------
  bool at_end() const { return pos_ >= src_.size(); }
  char peek() const { return at_end() ? '\0' : src_[pos_]; }
  static bool name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
  }

  void skip_space(bool newlines) {
    while (!at_end()) {
      const char c = peek();
      if (c == '#') {
        while (!at_end() && peek() != '\n') ++pos_;
      } else if (c == ' ' || c == '\t' || (newlines && (c == '\n' || c == '\r'))) {
        ++pos_;
      } else {
        return;
      }
    }
  }

  std::string parse_name() {
    const size_t start = pos_;
    while (!at_end() && name_char(peek())) ++pos_;
    if (pos_ == start) error("expected a rule name");
    return std::string(src_.substr(start, pos_ - start));
  }

  size_t rule_index(const std::string& name) {
    auto [it, added] = index_.emplace(name, rules_.size());
    if (added) {
      rules_.emplace_back();
      defined_.push_back(false);
    }
    return it->second;
  }

  void parse_grammar() {
    for (;;) {
      skip_space(true);
      if (at_end()) break;
      const std::string name = parse_name();
      skip_space(false);
      if (src_.substr(pos_, 3) != "::=") error("expected ::= after " + name);
      pos_ += 3;
      skip_space(true);
      const size_t r = rule_index(name);
      if (defined_[r]) error("rule defined twice: " + name);
      rules_[r] = parse_alternates(false);
      defined_[r] = true;
      skip_space(false);
      if (!at_end() && peek() != '\n' && peek() != '\r') error("junk after rule " + name);
    }
    for (const auto& [name, r] : index_)
      if (!defined_[r]) throw std::runtime_error("gbnf: undefined rule " + name);
    auto root = index_.find("root");
    if (root == index_.end()) throw std::runtime_error("gbnf: no root rule");
    root_ = root->second;
  }

  Node parse_alternates(bool nested) {
    Node alt{Kind::Alt};
    alt.kids.push_back(parse_sequence(nested));
    while (peek() == '|') {
      ++pos_;
      skip_space(true);
      alt.kids.push_back(parse_sequence(nested));
    }
    return alt;
  }

  uint32_t parse_char() {  // one (possibly escaped) code point inside a literal or class
    if (at_end()) error("unexpected end");
    if (peek() != '\\') {
      const auto b = static_cast<unsigned char>(peek());
      const size_t n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : 4;
      auto cps = decode(src_.substr(pos_, n));
      if (!cps || cps->size() != 1) error("bad UTF-8 in grammar");
      pos_ += n;
      return (*cps)[0];
    }
    ++pos_;
    const char e = peek();
    ++pos_;
    auto hex = [&](int n) {
      uint32_t v = 0;
      for (int i = 0; i < n; ++i) {
        const char c = peek();
        ++pos_;
        const int d = c >= '0' && c <= '9'   ? c - '0'
                      : c >= 'a' && c <= 'f' ? c - 'a' + 10
                      : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                             : -1;
        if (d < 0) error("bad hex escape");
        v = v * 16 + static_cast<uint32_t>(d);
      }
      return v;
    };
    switch (e) {
      case 'n':
        return '\n';
      case 'r':
        return '\r';
      case 't':
        return '\t';
      case 'x':
        return hex(2);
      case 'u':
        return hex(4);
      case 'U':
        return hex(8);
      case '\\':
      case '"':
      case '[':
      case ']':  // no \- or \^: llama.cpp's parser rejects them
        return static_cast<uint32_t>(e);
      default:
        error(std::string("unknown escape \\") + e);
    }
  }

  Node parse_element() {
    const char c = peek();
    if (c == '"') {
      ++pos_;
      Node lit{Kind::Lit};
      while (peek() != '"') lit.text.push_back(parse_char());
      ++pos_;
      return lit;
    }
    if (c == '[') {
      ++pos_;
      Node cls{Kind::Class};
      if (peek() == '^') {
        cls.negated = true;
        ++pos_;
      }
      while (peek() != ']') {
        const uint32_t lo = parse_char();
        uint32_t hi = lo;
        if (peek() == '-' && src_.substr(pos_ + 1, 1) != "]") {
          ++pos_;
          hi = parse_char();
        }
        cls.ranges.emplace_back(lo, hi);
      }
      ++pos_;
      return cls;
    }
    if (c == '(') {
      ++pos_;
      // The engines bound the nesting of groups (hearth's grammar parser at 64).
      if (++depth_ > kMaxNesting) error("groups nested deeper than 64");
      skip_space(true);
      Node group = parse_alternates(true);
      --depth_;
      skip_space(true);
      if (peek() != ')') error("expected )");
      ++pos_;
      return group;
    }
    if (c == '.') {
      ++pos_;
      return Node{Kind::Any};
    }
    Node ref{Kind::Ref};
    ref.rule = rule_index(parse_name());
    return ref;
  }

  uint64_t parse_int() {
    uint64_t v = 0;
    if (!(peek() >= '0' && peek() <= '9')) error("expected a number");
    while (peek() >= '0' && peek() <= '9') v = v * 10 + static_cast<uint64_t>(src_[pos_++] - '0');
    return v;
  }

  Node parse_sequence(bool nested) {
    Node seq{Kind::Seq};
    for (;;) {
      skip_space(nested);
      const char c = peek();
      const bool starts = c == '"' || c == '[' || c == '(' || c == '.' || name_char(c);
      if (!starts) break;
      if (!nested && name_char(c)) {  // the next rule's definition ends this one
        size_t k = pos_;
        while (k < src_.size() && name_char(src_[k])) ++k;
        while (k < src_.size() && (src_[k] == ' ' || src_[k] == '\t')) ++k;
        if (src_.substr(k, 3) == "::=") break;
      }
      Node e = parse_element();
      for (;;) {
        Node rep{Kind::Repeat};
        if (peek() == '*') {
          rep.lo = 0;
        } else if (peek() == '+') {
          rep.lo = 1;
        } else if (peek() == '?') {
          rep.hi = 1;
        } else if (peek() == '{') {
          ++pos_;
          rep.lo = parse_int();
          rep.hi = rep.lo;
          if (peek() == ',') {
            ++pos_;
            rep.hi = peek() == '}' ? std::nullopt : std::optional(parse_int());
          }
          if (peek() != '}') error("expected }");
        } else {
          break;
        }
        ++pos_;
        rep.kids.push_back(std::move(e));
        e = std::move(rep);
      }
      seq.kids.push_back(std::move(e));
    }
    return seq;
  }

  // --- matching ------------------------------------------------------------------------
  std::set<size_t> rule_ends(size_t rule, size_t pos) const {
    const auto key = std::make_pair(rule, pos);
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    if (!busy_.insert(key).second) throw std::runtime_error("gbnf: left recursion");
    std::set<size_t> out = ends(rules_[rule], pos);
    busy_.erase(key);
    memo_[key] = out;
    return out;
  }

  bool class_match(const Node& n, uint32_t cp) const {
    bool in = false;
    for (auto [lo, hi] : n.ranges) in = in || (lo <= cp && cp <= hi);
    return in != n.negated;
  }

  std::set<size_t> step(const Node& n, const std::set<size_t>& from) const {
    std::set<size_t> out;
    for (size_t p : from) {
      const std::set<size_t> e = ends(n, p);
      out.insert(e.begin(), e.end());
    }
    return out;
  }

  std::set<size_t> ends(const Node& n, size_t pos) const {
    switch (n.kind) {
      case Kind::Lit: {
        for (size_t i = 0; i < n.text.size(); ++i)
          if (pos + i >= input_.size() || input_[pos + i] != n.text[i]) return {};
        return {pos + n.text.size()};
      }
      case Kind::Class:
        if (pos < input_.size() && class_match(n, input_[pos])) return {pos + 1};
        return {};
      case Kind::Any:
        if (pos < input_.size()) return {pos + 1};
        return {};
      case Kind::Ref:
        return rule_ends(n.rule, pos);
      case Kind::Alt: {
        std::set<size_t> out;
        for (const Node& k : n.kids) {
          const std::set<size_t> e = ends(k, pos);
          out.insert(e.begin(), e.end());
        }
        return out;
      }
      case Kind::Seq: {
        std::set<size_t> cur = {pos};
        for (const Node& k : n.kids) {
          cur = step(k, cur);
          if (cur.empty()) break;
        }
        return cur;
      }
      case Kind::Repeat:
        return repeat_ends(n, pos);
    }
    return {};
  }

  std::set<size_t> repeat_ends(const Node& n, size_t pos) const {
    const Node& kid = n.kids[0];
    std::set<size_t> cur = {pos};
    for (uint64_t i = 0; i < n.lo; ++i) {
      cur = step(kid, cur);
      if (cur.empty()) return {};
    }
    std::set<size_t> out = cur;
    if (!n.hi) {  // unbounded: the closure of the positions reached
      std::set<size_t> frontier = cur;
      while (!frontier.empty()) {
        std::set<size_t> next;
        for (size_t p : step(kid, frontier))
          if (out.insert(p).second) next.insert(p);
        frontier = std::move(next);
      }
      return out;
    }
    for (uint64_t i = n.lo; i < *n.hi && !cur.empty(); ++i) {
      cur = step(kid, cur);
      out.insert(cur.begin(), cur.end());
    }
    return out;
  }

  static constexpr int kMaxNesting = 64;

  std::string_view src_;
  size_t pos_ = 0;
  int depth_ = 0;
  std::vector<Node> rules_;
  std::vector<bool> defined_;
  std::map<std::string, size_t> index_;
  size_t root_ = 0;

  mutable std::vector<uint32_t> input_;
  mutable std::map<std::pair<size_t, size_t>, std::set<size_t>> memo_;
  mutable std::set<std::pair<size_t, size_t>> busy_;
};

}  // namespace hearth::test
