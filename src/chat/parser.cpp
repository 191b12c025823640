#include "chat/parser.h"

#include <charconv>
#include <cstdlib>
#include <initializer_list>
#include <string_view>

#include "chat/lexer.h"
#include "chat/template_error.h"

namespace hearth::chat {
namespace {

using K = Token::Kind;

class Parser {
 public:
  Parser(const LexedSource& lexed, int max_nesting) : lx_(lexed), max_nesting_(max_nesting) {}

  Program run() {
    Program p;
    std::string end;
    p.body = parse_body({}, &end);
    return p;
  }

 private:
  // --- token helpers -------------------------------------------------------------------------
  const Token& cur() const { return lx_.tokens[pos_]; }
  const Token& peek(size_t n = 1) const {
    return lx_.tokens[std::min(pos_ + n, lx_.tokens.size() - 1)];
  }
  void next() {
    if (pos_ + 1 < lx_.tokens.size()) ++pos_;
  }
  Location loc() const { return lx_.locate(cur().offset); }
  Location loc_of(const Token& t) const { return lx_.locate(t.offset); }

  [[noreturn]] void error(const std::string& msg) const {
    throw TemplateError(TemplateError::Kind::Syntax, loc(), msg);
  }
  std::string describe(const Token& t) const {
    switch (t.kind) {
      case K::Eof:
        return "end of template";
      case K::VarEnd:
        return "'}}'";
      case K::BlockEnd:
        return "'%}'";
      case K::Text:
        return "template text";
      case K::String:
        return "string literal";
      default:
        return "'" + t.text + "'";
    }
  }
  bool is_op(const char* op) const { return cur().kind == K::Op && cur().text == op; }
  bool is_name(const char* n) const { return cur().kind == K::Name && cur().text == n; }
  bool skip_op(const char* op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(const char* n) {
    if (!is_name(n)) return false;
    next();
    return true;
  }
  void expect_op(const char* op) {
    if (!skip_op(op)) error(std::string("expected '") + op + "', got " + describe(cur()));
  }
  std::string expect_name() {
    if (cur().kind != K::Name) error("expected a name, got " + describe(cur()));
    std::string n = cur().text;
    next();
    return n;
  }
  void expect_block_end() {
    if (cur().kind != K::BlockEnd) error("expected '%}', got " + describe(cur()));
    next();
  }

  struct Depth {
    Parser& p;
    explicit Depth(Parser& parser) : p(parser) {
      if (++p.depth_ > p.max_nesting_) p.error("template nested too deeply");
    }
    ~Depth() { --p.depth_; }
  };

  ExprPtr make(Expr::Kind kind, Location l) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->loc = l;
    return e;
  }

  // --- statements ----------------------------------------------------------------------------
  // Parses until a block tag whose name is in `ends` (left unconsumed after the name; *end set).
  Body parse_body(std::initializer_list<const char*> ends, std::string* end) {
    Depth d(*this);
    Body body;
    while (true) {
      const Token& t = cur();
      if (t.kind == K::Eof) {
        if (ends.size() != 0) {
          std::string want;
          for (const char* e : ends) want += (want.empty() ? "" : " or ") + std::string(e);
          error("unexpected end of template; expected {% " + want + " %}");
        }
        *end = "";
        return body;
      }
      if (t.kind == K::Text) {
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::Text;
        s->loc = loc();
        s->text = t.text;
        body.push_back(std::move(s));
        next();
      } else if (t.kind == K::VarBegin) {
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::Print;
        s->loc = loc();
        next();
        s->expr = parse_tuple(true);
        if (cur().kind != K::VarEnd) error("expected '}}', got " + describe(cur()));
        next();
        body.push_back(std::move(s));
      } else if (t.kind == K::BlockBegin) {
        const Token& nt = peek();
        if (nt.kind != K::Name) {
          next();
          error("expected a statement name after '{%', got " + describe(cur()));
        }
        for (const char* e : ends) {
          if (nt.text == e) {
            next();
            next();
            *end = nt.text;
            return body;
          }
        }
        next();
        body.push_back(parse_statement());
      } else {
        error("unexpected " + describe(t));
      }
    }
  }

  // One parser per statement keyword; each fills in the Stmt (kind included) and reads up to
  // and including the statement's last '%}'.
  using StatementParser = void (Parser::*)(Stmt& s, const std::string& kw);
  struct NamedStatement {
    std::string_view keyword;
    StatementParser parse;
  };

  StmtPtr parse_statement() {
    static constexpr NamedStatement kStatements[] = {
        {"if", &Parser::parse_if},
        {"for", &Parser::parse_for},
        {"set", &Parser::parse_set},
        {"macro", &Parser::parse_macro},
        {"call", &Parser::parse_call_block},
        {"filter", &Parser::parse_filter_block},
        {"break", &Parser::parse_loop_control},
        {"continue", &Parser::parse_loop_control},
        {"generation", &Parser::parse_scope_block},
        {"block", &Parser::parse_scope_block},
        {"with", &Parser::parse_with},
    };
    Depth d(*this);
    const Location l = loc();
    const std::string kw = cur().text;
    next();
    auto s = std::make_unique<Stmt>();
    s->loc = l;
    for (const NamedStatement& st : kStatements) {
      if (st.keyword == kw) {
        (this->*st.parse)(*s, kw);
        return s;
      }
    }
    pos_--;  // point at the keyword
    if (kw.rfind("end", 0) == 0 || kw == "elif" || kw == "else")
      error("unexpected {% " + kw + " %} (no open block it could close)");
    error("unknown or unsupported statement '" + kw + "'");
  }

  // The '%}' of a block's opening tag, its body up to {% end_tag %}, and the end tag's '%}'
  // (after the block's name, where the end tag may repeat it: {% endmacro name %}).
  void parse_block_body(Stmt& s, const char* end_tag, bool end_may_name = false) {
    expect_block_end();
    std::string end;
    s.bodies.push_back(parse_body({end_tag}, &end));
    if (end_may_name && cur().kind == K::Name) next();
    expect_block_end();
  }

  void parse_if(Stmt& s, const std::string&) {
    s.kind = Stmt::Kind::If;
    s.conds.push_back(parse_tuple(true));
    expect_block_end();
    std::string end;
    while (true) {
      s.bodies.push_back(parse_body({"elif", "else", "endif"}, &end));
      if (end == "elif") {
        s.conds.push_back(parse_tuple(true));
        expect_block_end();
      } else if (end == "else") {
        expect_block_end();
        s.bodies.push_back(parse_body({"endif"}, &end));
        expect_block_end();
        break;
      } else {
        expect_block_end();
        break;
      }
    }
  }

  void parse_for(Stmt& s, const std::string&) {
    s.kind = Stmt::Kind::For;
    parse_targets(s.targets);
    if (!skip_name("in")) error("expected 'in' in for loop, got " + describe(cur()));
    s.expr = parse_tuple(false);
    if (skip_name("if")) s.cond = parse_expression(true);
    s.recursive = skip_name("recursive");  // after the filter, as in Jinja's grammar
    expect_block_end();
    std::string end;
    ++loop_depth_;
    s.bodies.push_back(parse_body({"else", "endfor"}, &end));
    --loop_depth_;
    if (end == "else") {
      expect_block_end();
      s.bodies.push_back(parse_body({"endfor"}, &end));
    }
    expect_block_end();
  }

  // set ns.attr = v; set a, b = v; set name [| filters] %}body{% endset %}
  void parse_set(Stmt& s, const std::string&) {
    const std::string first = expect_name();
    s.targets.push_back(first);
    if (skip_op(".")) {
      s.kind = Stmt::Kind::Set;
      s.target_attr = expect_name();
      expect_op("=");
      s.expr = parse_tuple(true);
      expect_block_end();
      return;
    }
    while (skip_op(",")) s.targets.push_back(expect_name());
    if (skip_op("=")) {
      s.kind = Stmt::Kind::Set;
      s.expr = parse_tuple(true);
      expect_block_end();
      return;
    }
    if (s.targets.size() != 1) error("expected '=' after the names of a set");
    s.kind = Stmt::Kind::SetBlock;
    while (skip_op("|")) s.filters.push_back(parse_filter(nullptr));
    parse_block_body(s, "endset");
  }

  void parse_macro(Stmt& s, const std::string&) {
    s.kind = Stmt::Kind::Macro;
    s.text = expect_name();
    parse_params(s.params);
    parse_block_body(s, "endmacro", true);
    auto def = std::make_shared<MacroDef>();
    def->name = s.text;
    def->params = &s.params;
    def->body = &s.bodies[0];
    s.macro = def;
  }

  void parse_call_block(Stmt& s, const std::string&) {
    s.kind = Stmt::Kind::CallBlock;
    if (is_op("(")) parse_params(s.params);
    s.expr = parse_expression(true);
    if (s.expr->kind != Expr::Kind::Call) error("{% call %} needs a macro call");
    parse_block_body(s, "endcall");
  }

  void parse_filter_block(Stmt& s, const std::string&) {
    s.kind = Stmt::Kind::FilterBlock;
    s.filters.push_back(parse_filter(nullptr));
    while (skip_op("|")) s.filters.push_back(parse_filter(nullptr));
    parse_block_body(s, "endfilter");
  }

  // break, continue.
  void parse_loop_control(Stmt& s, const std::string& kw) {
    if (loop_depth_ == 0) error("'" + kw + "' outside of a for loop");
    s.kind = kw == "break" ? Stmt::Kind::Break : Stmt::Kind::Continue;
    expect_block_end();
  }

  // transformers' {% generation %} marks assistant text; Jinja's block renders in place.
  void parse_scope_block(Stmt& s, const std::string& kw) {
    s.kind = Stmt::Kind::Scope;
    if (kw == "block") {
      expect_name();
      if (is_name("scoped")) next();
    }
    parse_block_body(s, kw == "block" ? "endblock" : "endgeneration", true);
  }

  void parse_with(Stmt& s, const std::string&) {
    s.kind = Stmt::Kind::Scope;
    s.new_scope = true;
    while (cur().kind != K::BlockEnd) {
      if (!s.targets.empty()) expect_op(",");
      s.targets.push_back(expect_name());
      expect_op("=");
      s.exprs.push_back(parse_expression(true));
    }
    parse_block_body(s, "endwith");
  }

  // `for` targets: a, b or (a, b)
  void parse_targets(std::vector<std::string>& targets) {
    const bool paren = skip_op("(");
    targets.push_back(expect_name());
    while (skip_op(",")) {
      if (paren && is_op(")")) break;
      targets.push_back(expect_name());
    }
    if (paren) expect_op(")");
  }

  void parse_params(std::vector<MacroParam>& params) {
    expect_op("(");
    while (!is_op(")")) {
      if (!params.empty()) expect_op(",");
      if (is_op(")")) break;
      MacroParam p;
      p.name = expect_name();
      if (skip_op("=")) p.default_value = parse_expression(true);
      params.push_back(std::move(p));
    }
    expect_op(")");
  }

  // --- expressions ---------------------------------------------------------------------------
  // Comma-separated expressions become a tuple (without parentheses, as Jinja allows).
  ExprPtr parse_tuple(bool with_condexpr) {
    const Location l = loc();
    ExprPtr first = parse_expression(with_condexpr);
    if (!is_op(",")) return first;
    auto t = make(Expr::Kind::Tuple, l);
    t->args.push_back(std::move(first));
    while (skip_op(",")) {
      if (cur().kind == K::VarEnd || cur().kind == K::BlockEnd || is_name("if") || is_op(")"))
        break;
      t->args.push_back(parse_expression(with_condexpr));
    }
    return t;
  }

  ExprPtr parse_expression(bool with_condexpr) {
    Depth d(*this);
    if (!with_condexpr) return parse_or();
    ExprPtr e = parse_or();
    while (is_name("if")) {
      const Location l = loc();
      next();
      auto c = make(Expr::Kind::CondExpr, l);
      ExprPtr cond = parse_or();
      ExprPtr other;
      if (skip_name("else")) other = parse_expression(true);
      c->args.push_back(std::move(e));
      c->args.push_back(std::move(cond));
      c->args.push_back(std::move(other));
      e = std::move(c);
    }
    return e;
  }

  ExprPtr binary(Expr::Kind kind, Location l, ExprPtr a, ExprPtr b, std::string op = {}) {
    auto e = make(kind, l);
    e->op = std::move(op);
    e->args.push_back(std::move(a));
    e->args.push_back(std::move(b));
    return e;
  }

  ExprPtr parse_or() {
    ExprPtr e = parse_and();
    while (is_name("or")) {
      const Location l = loc();
      next();
      e = binary(Expr::Kind::Or, l, std::move(e), parse_and());
    }
    return e;
  }
  ExprPtr parse_and() {
    ExprPtr e = parse_not();
    while (is_name("and")) {
      const Location l = loc();
      next();
      e = binary(Expr::Kind::And, l, std::move(e), parse_not());
    }
    return e;
  }
  ExprPtr parse_not() {
    Depth d(*this);
    if (is_name("not")) {
      const Location l = loc();
      next();
      auto e = make(Expr::Kind::Not, l);
      e->args.push_back(parse_not());
      return e;
    }
    return parse_compare();
  }
  ExprPtr parse_compare() {
    const Location l = loc();
    ExprPtr first = parse_math1();
    ExprPtr cmp;
    while (true) {
      std::string op;
      if (cur().kind == K::Op && (cur().text == "==" || cur().text == "!=" || cur().text == "<" ||
                                  cur().text == ">" || cur().text == "<=" || cur().text == ">=")) {
        op = cur().text;
        next();
      } else if (is_name("in")) {
        op = "in";
        next();
      } else if (is_name("not") && peek().kind == K::Name && peek().text == "in") {
        op = "notin";
        next();
        next();
      } else {
        break;
      }
      if (!cmp) {
        cmp = make(Expr::Kind::Compare, l);
        cmp->args.push_back(std::move(first));
      }
      cmp->ops.push_back(op);
      cmp->args.push_back(parse_math1());
    }
    return cmp ? std::move(cmp) : std::move(first);
  }
  ExprPtr parse_math1() {
    ExprPtr e = parse_concat();
    while (is_op("+") || is_op("-")) {
      const Location l = loc();
      std::string op = cur().text;
      next();
      e = binary(Expr::Kind::Binary, l, std::move(e), parse_concat(), op);
    }
    return e;
  }
  ExprPtr parse_concat() {
    const Location l = loc();
    ExprPtr e = parse_math2();
    if (!is_op("~")) return e;
    auto c = make(Expr::Kind::Concat, l);
    c->args.push_back(std::move(e));
    while (skip_op("~")) c->args.push_back(parse_math2());
    return c;
  }
  ExprPtr parse_math2() {
    ExprPtr e = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Location l = loc();
      std::string op = cur().text;
      next();
      e = binary(Expr::Kind::Binary, l, std::move(e), parse_pow(), op);
    }
    return e;
  }
  ExprPtr parse_pow() {
    ExprPtr e = parse_unary(true);
    while (is_op("**")) {
      const Location l = loc();
      next();
      e = binary(Expr::Kind::Binary, l, std::move(e), parse_unary(true), "**");
    }
    return e;
  }
  ExprPtr parse_unary(bool with_filter) {
    Depth d(*this);
    const Location l = loc();
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      const bool neg = cur().text == "-";
      next();
      e = make(neg ? Expr::Kind::Neg : Expr::Kind::Pos, l);
      e->args.push_back(parse_unary(false));
    } else {
      e = parse_primary();
    }
    e = parse_postfix(std::move(e));
    if (with_filter) e = parse_filter_expr(std::move(e));
    return e;
  }

  ExprPtr constant(Value v, Location l) {
    auto e = make(Expr::Kind::Const, l);
    e->value = std::move(v);
    return e;
  }

  ExprPtr parse_primary() {
    Depth d(*this);
    const Location l = loc();
    const Token& t = cur();
    switch (t.kind) {
      case K::Name:
        return parse_name(l);
      case K::String: {
        std::string s = t.text;
        next();
        while (cur().kind == K::String) {  // adjacent literals concatenate
          s += cur().text;
          next();
        }
        return constant(Value::string(std::move(s), true), l);
      }
      case K::Int: {
        int64_t v = 0;
        auto r = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
        next();
        if (r.ec != std::errc())  // too big for an int64: a float, as near as it gets
          return constant(Value::number(std::strtod(t.text.c_str(), nullptr)), l);
        return constant(Value::integer(v), l);
      }
      case K::Float: {
        const double v = std::strtod(t.text.c_str(), nullptr);
        next();
        return constant(Value::number(v), l);
      }
      case K::Op:
        if (t.text == "(") return parse_parenthesized(l);
        if (t.text == "[") return parse_collection(Expr::Kind::List, "]", l);
        if (t.text == "{") return parse_collection(Expr::Kind::Dict, "}", l);
        break;
      default:
        break;
    }
    error("unexpected " + describe(t));
  }

  // A variable, or one of the constants true/false/none (either capitalisation).
  ExprPtr parse_name(Location l) {
    const std::string n = cur().text;
    next();
    if (n == "true" || n == "True") return constant(Value::boolean(true), l);
    if (n == "false" || n == "False") return constant(Value::boolean(false), l);
    if (n == "none" || n == "None") return constant(Value::none(), l);
    auto e = make(Expr::Kind::Name, l);
    e->name = n;
    return e;
  }

  // (expr), () and (a, b, ...) tuples.
  ExprPtr parse_parenthesized(Location l) {
    next();
    if (skip_op(")")) return make(Expr::Kind::Tuple, l);
    ExprPtr e = parse_expression(true);
    if (is_op(",")) {
      auto tup = make(Expr::Kind::Tuple, l);
      tup->args.push_back(std::move(e));
      while (skip_op(",")) {
        if (is_op(")")) break;
        tup->args.push_back(parse_expression(true));
      }
      e = std::move(tup);
    }
    expect_op(")");
    return e;
  }

  // [a, b] and {k: v, ...}: comma-separated items up to `close`, a trailing comma allowed.
  ExprPtr parse_collection(Expr::Kind kind, const char* close, Location l) {
    next();
    auto e = make(kind, l);
    while (!is_op(close)) {
      if (!e->args.empty()) expect_op(",");
      if (is_op(close)) break;
      e->args.push_back(parse_expression(true));
      if (kind == Expr::Kind::Dict) {
        expect_op(":");
        e->args.push_back(parse_expression(true));
      }
    }
    expect_op(close);
    return e;
  }

  ExprPtr parse_postfix(ExprPtr e) {
    while (true) {
      const Location l = loc();
      if (is_op(".")) {
        next();
        if (cur().kind == K::Name) {
          auto g = make(Expr::Kind::GetAttr, l);
          g->name = cur().text;
          next();
          g->args.push_back(std::move(e));
          e = std::move(g);
        } else if (cur().kind == K::Int) {
          auto g = make(Expr::Kind::GetItem, l);
          g->args.push_back(std::move(e));
          g->args.push_back(constant(Value::integer(std::atoll(cur().text.c_str())), l));
          next();
          e = std::move(g);
        } else {
          error("expected an attribute name after '.', got " + describe(cur()));
        }
      } else if (is_op("[")) {
        next();
        e = parse_subscript(std::move(e), l);
      } else if (is_op("(")) {
        e = parse_call(std::move(e), l);
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr obj, Location l) {
    Depth d(*this);
    ExprPtr parts[3];
    bool slice = false;
    int i = 0;
    if (!is_op(":")) parts[0] = parse_expression(true);
    while (is_op(":") && i < 2) {
      next();
      slice = true;
      ++i;
      if (!is_op(":") && !is_op("]")) parts[i] = parse_expression(true);
    }
    expect_op("]");
    if (!slice) {
      if (!parts[0]) error("empty subscript");
      auto g = make(Expr::Kind::GetItem, l);
      g->args.push_back(std::move(obj));
      g->args.push_back(std::move(parts[0]));
      return g;
    }
    auto s = make(Expr::Kind::Slice, l);
    s->args.push_back(std::move(obj));
    for (auto& p : parts) s->args.push_back(std::move(p));
    return s;
  }

  void parse_args(Expr& call) {
    expect_op("(");
    bool first = true;
    while (!is_op(")")) {
      if (!first) expect_op(",");
      first = false;
      if (is_op(")")) break;
      if (cur().kind == K::Name && peek().kind == K::Op && peek().text == "=") {
        std::string name = cur().text;
        next();
        next();
        call.kwargs.emplace_back(std::move(name), parse_expression(true));
      } else {
        if (!call.kwargs.empty()) error("positional argument after keyword argument");
        call.args.push_back(parse_expression(true));
      }
    }
    expect_op(")");
  }

  ExprPtr parse_call(ExprPtr callee, Location l) {
    Depth d(*this);
    auto c = make(Expr::Kind::Call, l);
    c->args.push_back(std::move(callee));
    parse_args(*c);
    return c;
  }

  // `| name(args)`; obj may be null (filter blocks and block sets apply it later).
  ExprPtr parse_filter(ExprPtr obj) {
    Depth d(*this);
    const Location l = loc();
    auto f = make(Expr::Kind::Filter, l);
    f->name = expect_name();
    while (skip_op(".")) f->name += "." + expect_name();
    f->args.push_back(std::move(obj));
    if (is_op("(")) parse_args(*f);
    return f;
  }

  ExprPtr parse_filter_expr(ExprPtr e) {
    while (true) {
      if (is_op("|")) {
        next();
        e = parse_filter(std::move(e));
      } else if (is_name("is")) {
        const Location l = loc();
        next();
        auto t = make(Expr::Kind::Test, l);
        t->negated = skip_name("not");
        t->name = expect_name();
        while (skip_op(".")) t->name += "." + expect_name();
        t->args.push_back(std::move(e));
        if (is_op("(")) {
          parse_args(*t);
        } else if ((cur().kind == K::Name || cur().kind == K::String || cur().kind == K::Int ||
                    cur().kind == K::Float || is_op("[") || is_op("{")) &&
                   !(is_name("else") || is_name("or") || is_name("and") || is_name("if") ||
                     is_name("in") || is_name("not") || is_name("is"))) {
          ExprPtr arg = parse_primary();
          t->args.push_back(parse_postfix(std::move(arg)));
        }
        e = std::move(t);
      } else if (is_op("(")) {
        e = parse_call(std::move(e), loc());
      } else {
        return e;
      }
    }
  }

  const LexedSource& lx_;
  size_t pos_ = 0;
  int depth_ = 0;
  int max_nesting_;
  int loop_depth_ = 0;
};

}  // namespace

Program parse_template(const std::string& source, int max_nesting) {
  LexedSource lexed = lex(source);
  return Parser(lexed, max_nesting).run();
}

}  // namespace hearth::chat
