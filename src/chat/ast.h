// The parsed form of a template: expression and statement trees with source positions.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "chat/value.h"

namespace hearth::chat {

struct Location {
  int line = 1;
  int column = 1;
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    Const,     // value
    Name,      // name
    GetAttr,   // a.name            args[0] = a
    GetItem,   // a[b]              args = {a, b}
    Slice,     // a[b:c:d]          args = {a, b?, c?, d?} (null = omitted)
    Call,      // f(args, name=kw)  args[0] = f, then positional; kwargs
    Filter,    // a | name(args)    args[0] = a (null inside a filter block), then positional
    Test,      // a is [not] name   args[0] = a, then positional; negated
    Neg,       // -a
    Pos,       // +a
    Not,       // not a
    And,       // a and b
    Or,        // a or b
    Binary,    // a op b            (op: + - * / // % **)
    Concat,    // a ~ b ~ ...
    Compare,   // a op1 b op2 c     ops (== != < <= > >= in notin)
    CondExpr,  // args = {then, cond, else?}
    List,      // [a, b]
    Tuple,     // (a, b)
    Dict,      // {k: v}            args = k0, v0, k1, v1, ...
  };
  Kind kind;
  Location loc;
  std::string name;              // Name, GetAttr, Filter, Test, Call (callee name when simple)
  std::string op;                // Binary
  std::vector<std::string> ops;  // Compare
  bool negated = false;          // Test
  Value value;                   // Const
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // may be null
};

struct Stmt {
  enum class Kind {
    Text,         // text (template data)
    Print,        // {{ expr }}
    If,           // conds[i] -> bodies[i]; bodies.size() == conds.size() + 1 when there is else
    For,          // targets in expr [if cond]: bodies[0], else: bodies[1]
    Set,          // targets = expr, or attr target (target_attr) = expr
    SetBlock,     // targets[0] = captured bodies[0], filtered by filters
    Macro,        // name(params): bodies[0]
    CallBlock,    // {% call(params) expr %} bodies[0] {% endcall %}
    FilterBlock,  // filters applied to bodies[0]
    Break,
    Continue,
    Scope,  // generation / block / with: bodies[0] (with: assignments in `targets`/`exprs`)
  };
  Kind kind;
  Location loc;
  std::string text;
  ExprPtr expr;                // Print, For (iterable), Set (value), CallBlock (call)
  ExprPtr cond;                // For filter
  std::vector<ExprPtr> conds;  // If
  std::vector<Body> bodies;
  std::vector<std::string> targets;  // For/Set names; With names
  std::string target_attr;           // Set ns.attr: targets[0] = ns
  std::vector<ExprPtr> exprs;        // With values
  std::vector<ExprPtr> filters;      // SetBlock / FilterBlock: Filter exprs with args[0] == null
  std::vector<MacroParam> params;    // Macro / CallBlock
  bool new_scope = false;            // Scope: with-blocks open a scope
  bool recursive = false;            // For: `loop(items)` renders the body for items
  std::shared_ptr<struct MacroDef> macro;  // Macro
};

struct MacroDef {
  std::string name;
  const std::vector<MacroParam>* params = nullptr;
  const Body* body = nullptr;
  bool uses_caller = false;
  bool uses_varargs = false;
  bool uses_kwargs = false;
};

}  // namespace hearth::chat
