#include "chat/interpreter.h"

#include <algorithm>
#include <limits>
#include <optional>

#include "chat/builtins.h"

namespace hearth::chat {

using Kind = TemplateError::Kind;

void append_ranges(Ranges& a, size_t a_size, const Ranges& b) {
  for (const auto& r : b) {
    const auto first = static_cast<uint32_t>(r.first + a_size);
    const auto second = static_cast<uint32_t>(r.second + a_size);
    if (!a.empty() && a.back().second == first) {
      a.back().second = second;
    } else {
      a.push_back({first, second});
    }
  }
}

Value derived_string(std::string s, bool trusted) {
  return Value::string(std::move(s), trusted);
}

Value* Interpreter::Scope::find(std::string_view name) {
  for (Scope* s = this; s; s = s->parent)
    for (auto& kv : s->vars)
      if (kv.first == name) return &kv.second;
  return nullptr;
}

void Interpreter::Scope::set(const std::string& name, Value v) {
  for (auto& kv : vars) {
    if (kv.first == name) {
      kv.second = std::move(v);
      return;
    }
  }
  vars.emplace_back(name, std::move(v));
}

Interpreter::Interpreter(const Program& program, const RenderOptions& options)
    : program_(program), opt_(options) {}

void Interpreter::fail(Kind kind, const std::string& message) const {
  throw TemplateError(kind, loc_, message);
}

void Interpreter::charge(uint64_t units) {
  work_ += units;
  if (work_ > opt_.limits.max_work)
    fail(Kind::Limit, "the template did too much work (Limits::max_work)");
}

void Interpreter::check_size(size_t bytes) {
  if (bytes > opt_.limits.max_output_bytes)
    fail(Kind::Limit, "a string would exceed the output limit of " +
                          std::to_string(opt_.limits.max_output_bytes) + " bytes");
  charge(bytes / 16 + 1);
}

Rendered Interpreter::run(const nlohmann::ordered_json& context) {
  if (!context.is_object() && !context.is_null())
    throw TemplateError(Kind::Runtime, {1, 1}, "the render context must be a JSON object");
  Variables vars;
  if (context.is_object()) {
    vars.reserve(context.size());
    try {
      for (const auto& [k, v] : context.items()) vars.emplace_back(k, Value::from_json(v));
    } catch (const hearth::Error& e) {
      throw TemplateError(Kind::Runtime, {1, 1}, std::string("render context: ") + e.what());
    }
  }
  return run(std::move(vars));
}

Rendered Interpreter::run(Variables vars) {
  root_.vars = std::move(vars);
  for (auto& [k, v] : root_.vars) {
    if (!v.is_string() || v.str_ref().fully_trusted()) continue;
    for (const auto& name : opt_.special_variables)
      if (name == k) v = Value::string(v.str(), true);
  }
  outs_.emplace_back();
  outs_.back().text.reserve(4096);
  try {
    exec(program_.body, root_);
  } catch (const TemplateError&) {
    throw;
  } catch (const hearth::Error& e) {  // from values (nesting) or JSON dumping: add the location
    throw TemplateError(Kind::Runtime, loc_, e.what());
  }
  Rendered r;
  r.text = std::move(outs_.back().text);
  r.special_ok.reserve(outs_.back().ranges.size());
  for (const auto& [a, b] : outs_.back().ranges) r.special_ok.emplace_back(a, b);
  return r;
}

void Interpreter::emit_text(const std::string& text) {
  Out& o = outs_.back();
  const size_t at = o.text.size();
  if (at + text.size() > opt_.limits.max_output_bytes)
    fail(Kind::Limit, "the output would exceed " + std::to_string(opt_.limits.max_output_bytes) +
                          " bytes (Limits::max_output_bytes)");
  o.text += text;
  if (text.empty()) return;
  const auto first = static_cast<uint32_t>(at), second = static_cast<uint32_t>(at + text.size());
  if (!o.ranges.empty() && o.ranges.back().second == first) {
    o.ranges.back().second = second;
  } else {
    o.ranges.push_back({first, second});
  }
}

void Interpreter::emit(const Value& v) {
  Out& o = outs_.back();
  const size_t at = o.text.size();
  if (v.is_string()) {
    const StrData& d = v.str_ref();
    if (at + d.s.size() > opt_.limits.max_output_bytes)
      fail(Kind::Limit, "the output would exceed " + std::to_string(opt_.limits.max_output_bytes) +
                            " bytes (Limits::max_output_bytes)");
    o.text += d.s;
    append_ranges(o.ranges, at, d.trusted);
    return;
  }
  std::string s = v.to_str();
  if (at + s.size() > opt_.limits.max_output_bytes)
    fail(Kind::Limit, "the output would exceed " + std::to_string(opt_.limits.max_output_bytes) +
                          " bytes (Limits::max_output_bytes)");
  o.text += s;
}

// Renders into a fresh output and returns it as a string (trusted ranges kept).
template <typename Render>
Value Interpreter::capture_output(Render&& render) {
  outs_.emplace_back();
  render();
  Out o = std::move(outs_.back());
  outs_.pop_back();
  auto d = std::make_shared<StrData>();
  d->s = std::move(o.text);
  d->trusted = std::move(o.ranges);
  return Value::string(std::move(d));
}

Value Interpreter::capture(const Body& body, Scope& scope) {
  return capture_output([&] { exec(body, scope); });
}

Interpreter::Flow Interpreter::exec(const Body& body, Scope& scope) {
  for (const auto& s : body) {
    const Flow f = exec_stmt(*s, scope);
    if (f != Flow::Normal) return f;
  }
  return Flow::Normal;
}

Value Interpreter::apply_filters(const std::vector<ExprPtr>& filters, Value v, Scope& scope) {
  for (const auto& f : filters) {
    CallArgs args;
    eval_args(*f, 1, scope, args);
    loc_ = f->loc;
    v = apply_filter(*this, f->name, v, args);
  }
  return v;
}

Interpreter::Flow Interpreter::exec_stmt(const Stmt& s, Scope& scope) {
  switch (s.kind) {
    case Stmt::Kind::Text:
      emit_text(s.text);
      return Flow::Normal;
    case Stmt::Kind::Print:
      emit(eval(*s.expr, scope));
      return Flow::Normal;
    case Stmt::Kind::If:
      return exec_if(s, scope);
    case Stmt::Kind::For: {
      Flow f = Flow::Normal;
      exec_for(s, scope, f);
      return Flow::Normal;
    }
    case Stmt::Kind::Set:
      exec_set(s, scope);
      return Flow::Normal;
    case Stmt::Kind::SetBlock: {
      Value v = capture(s.bodies[0], scope);
      scope.set(s.targets[0], apply_filters(s.filters, std::move(v), scope));
      return Flow::Normal;
    }
    case Stmt::Kind::Macro:
      define_macro(s, scope);
      return Flow::Normal;
    case Stmt::Kind::CallBlock:
      exec_call_block(s, scope);
      return Flow::Normal;
    case Stmt::Kind::FilterBlock: {
      Value v = capture(s.bodies[0], scope);
      emit(apply_filters(s.filters, std::move(v), scope));
      return Flow::Normal;
    }
    case Stmt::Kind::Break:
      return Flow::Break;
    case Stmt::Kind::Continue:
      return Flow::Continue;
    case Stmt::Kind::Scope:
      return exec_scope(s, scope);
  }
  return Flow::Normal;
}

Interpreter::Flow Interpreter::exec_if(const Stmt& s, Scope& scope) {
  for (size_t i = 0; i < s.conds.size(); ++i)
    if (eval(*s.conds[i], scope).truthy()) return exec(s.bodies[i], scope);
  if (s.bodies.size() > s.conds.size()) return exec(s.bodies.back(), scope);
  return Flow::Normal;
}

// `set name = v`, `set a, b = pair` (unpacking) and `set ns.attr = v` (namespaces only).
void Interpreter::exec_set(const Stmt& s, Scope& scope) {
  Value v = eval(*s.expr, scope);
  if (!s.target_attr.empty()) {
    Value* ns = scope.find(s.targets[0]);
    loc_ = s.loc;
    if (!ns || !ns->is_dict() || !ns->dict_data().is_namespace)
      fail(Kind::Runtime, "cannot assign attribute on non-namespace object");
    charge(64);
    if (reaches(v, &ns->dict_data())) fail(Kind::Runtime, "a namespace cannot contain itself");
    ns->dict_data().set(s.target_attr, std::move(v));
  } else if (s.targets.size() == 1) {
    scope.set(s.targets[0], std::move(v));
  } else {
    loc_ = s.loc;
    if (!v.is_list() || v.list_data().items.size() != s.targets.size())
      fail(Kind::Runtime, "cannot unpack " + v.type_name() + " into " +
                              std::to_string(s.targets.size()) + " names");
    for (size_t i = 0; i < s.targets.size(); ++i) scope.set(s.targets[i], v.list_data().items[i]);
  }
}

void Interpreter::define_macro(const Stmt& s, Scope& scope) {
  auto c = std::make_shared<Callable>();
  c->name = s.text;
  const Stmt* def = &s;
  c->fn = [def](Interpreter& in, CallArgs& a) { return in.call_macro(*def, a, nullptr); };
  scope.set(s.text, Value::callable(std::move(c)));
}

// caller() renders the call block's body in this scope, with the call block's parameters; it
// refuses to run once *alive is false (the block has ended, its scope is gone).
Value Interpreter::make_caller(const Stmt& s, Scope& scope, std::shared_ptr<bool> alive) {
  auto c = std::make_shared<Callable>();
  c->name = "caller";
  const Stmt* st = &s;
  Scope* sc = &scope;
  c->fn = [st, sc, alive](Interpreter& in, CallArgs& a) -> Value {
    if (!*alive) in.fail(Kind::Runtime, "caller() used outside its call block");
    Scope inner;
    inner.parent = sc;
    for (size_t i = 0; i < st->params.size(); ++i) {
      Value v;
      if (i < a.positional.size()) {
        v = a.positional[i];
      } else if (const Value* k = a.kw(st->params[i].name)) {
        v = *k;
      } else if (st->params[i].default_value) {
        v = in.eval(*st->params[i].default_value, inner);
      }
      inner.set(st->params[i].name, std::move(v));
    }
    return in.capture(st->bodies[0], inner);
  };
  return Value::callable(std::move(c));
}

// {% call(params) macro(args) %}body{% endcall %}: the macro called with caller= the body.
void Interpreter::exec_call_block(const Stmt& s, Scope& scope) {
  auto alive = std::make_shared<bool>(true);
  Value caller = make_caller(s, scope, alive);
  const Expr& call_expr = *s.expr;
  Value fn = eval(*call_expr.args[0], scope);
  CallArgs args;
  eval_args(call_expr, 1, scope, args);
  args.keyword.emplace_back("caller", caller);
  loc_ = call_expr.loc;
  Value out = call(fn, args);
  *alive = false;
  emit(out);
}

// generation/block render in place; with-blocks bind their names in a scope of their own.
Interpreter::Flow Interpreter::exec_scope(const Stmt& s, Scope& scope) {
  if (!s.new_scope) return exec(s.bodies[0], scope);
  Scope inner;
  inner.parent = &scope;
  for (size_t i = 0; i < s.targets.size(); ++i) inner.set(s.targets[i], eval(*s.exprs[i], scope));
  return exec(s.bodies[0], inner);
}

namespace {

// The items a for loop (or a filter) iterates: list items, dict keys, string characters.
std::vector<Value> iterate_items(Interpreter& in, const Value& v) {
  switch (v.type()) {
    case Value::Type::Undefined:
      return {};
    case Value::Type::List:
      return v.list_data().items;
    case Value::Type::Dict: {
      std::vector<Value> keys;
      keys.reserve(v.dict_data().items.size());
      for (const auto& kv : v.dict_data().items) keys.push_back(kv.first);
      return keys;
    }
    case Value::Type::String: {
      std::vector<Value> chars;
      const std::string& s = v.str();
      const bool trusted = v.str_ref().fully_trusted();
      auto off = utf8_offsets(s);
      chars.reserve(off.size());
      for (size_t i = 0; i + 1 < off.size(); ++i)
        chars.push_back(Value::string(s.substr(off[i], off[i + 1] - off[i]), trusted));
      return chars;
    }
    default:
      in.fail(Kind::Type, "'" + v.type_name() + "' object is not iterable");
  }
}

}  // namespace

std::vector<Value> iterable_items(Interpreter& in, const Value& v) {
  return iterate_items(in, v);
}

void Interpreter::exec_for(const Stmt& s, Scope& scope, Flow& flow) {
  Value iterable = eval(*s.expr, scope);
  loc_ = s.loc;
  run_loop(s, scope, iterable, 0);
  flow = Flow::Normal;  // break/continue end at their own loop
}

// One pass of a for loop over `iterable` (a recursive loop's `loop(items)` runs another, one
// level deeper, with the same body, filter and else block).
void Interpreter::run_loop(const Stmt& s, Scope& scope, const Value& iterable, size_t depth0) {
  std::vector<Value> items = iterate_items(*this, iterable);
  Scope inner;
  inner.parent = &scope;
  auto bind = [&](const Value& item) {
    if (s.targets.size() == 1) {
      inner.set(s.targets[0], item);
      return;
    }
    if (!item.is_list() || item.list_data().items.size() != s.targets.size()) {
      loc_ = s.loc;
      fail(Kind::Runtime, "cannot unpack " + item.type_name() + " into " +
                              std::to_string(s.targets.size()) + " loop variables");
    }
    for (size_t i = 0; i < s.targets.size(); ++i)
      inner.set(s.targets[i], item.list_data().items[i]);
  };
  if (s.cond) {
    std::vector<Value> kept;
    for (auto& item : items) {
      charge(1);
      bind(item);
      if (eval(*s.cond, inner).truthy()) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  if (items.empty()) {
    if (s.bodies.size() > 1) exec(s.bodies[1], scope);
    return;
  }
  auto loop = std::make_shared<LoopData>();
  loop->items = std::move(items);
  loop->depth0 = depth0;
  // The loop value may outlive this pass (stored in a namespace); calling it then must not
  // touch the finished scope.
  auto alive = std::make_shared<bool>(true);
  struct AliveGuard {
    bool& a;
    ~AliveGuard() { a = false; }
  } alive_guard{*alive};
  if (s.recursive) {
    const Stmt* st = &s;
    Scope* sc = &scope;
    loop->recurse = [st, sc, depth0, alive](Interpreter& in, CallArgs& a) -> Value {
      if (!*alive) in.fail(Kind::Runtime, "a recursive loop called after it ended");
      return in.recurse_loop(*st, *sc, a, depth0 + 1);
    };
  }
  inner.set("loop", Value::loop(loop));
  const size_t n = loop->items.size();
  for (size_t i = 0; i < n; ++i) {
    if (++iterations_ > opt_.limits.max_loop_iterations) {
      loc_ = s.loc;
      fail(Kind::Limit, "more than " + std::to_string(opt_.limits.max_loop_iterations) +
                            " loop iterations (Limits::max_loop_iterations)");
    }
    charge(1);
    loop->index0 = i;
    bind(loop->items[i]);
    const Flow f = exec(s.bodies[0], inner);
    if (f == Flow::Break) break;
  }
}

// Macro calls and recursive loop calls nest through the interpreter's own recursion: both count
// against Limits::max_call_depth, so a template cannot exhaust the stack.
Interpreter::CallDepth Interpreter::enter_call(const char* what) {
  if (call_depth_ >= opt_.limits.max_call_depth)
    fail(Kind::Limit, std::string(what) + " nested deeper than " +
                          std::to_string(opt_.limits.max_call_depth) + " (Limits::max_call_depth)");
  return CallDepth(call_depth_);
}

// `loop(items)` inside a recursive for: the body rendered for `items`, as a string. Nested
// calls count against Limits::max_call_depth like macro calls.
Value Interpreter::recurse_loop(const Stmt& s, Scope& scope, CallArgs& args, size_t depth0) {
  if (args.positional.size() != 1 || !args.keyword.empty())
    fail(Kind::Type, "loop() takes exactly one argument, the items to iterate");
  const CallDepth guard = enter_call("recursive loop calls");
  const Value iterable = args.positional[0];
  return capture_output([&] { run_loop(s, scope, iterable, depth0); });
}

Value Interpreter::call_macro(const Stmt& def, CallArgs& args, const Value* caller) {
  const CallDepth guard = enter_call("macro calls");
  Scope scope;
  scope.parent = &root_;
  const auto& params = def.params;
  std::vector<Value> varargs;
  for (size_t i = 0; i < args.positional.size(); ++i) {
    if (i < params.size()) {
      scope.set(params[i].name, args.positional[i]);
    } else {
      varargs.push_back(args.positional[i]);
    }
  }
  Value kwargs = Value::dict();
  for (auto& [k, v] : args.keyword) {
    bool is_param = false;
    for (const auto& p : params) is_param = is_param || p.name == k;
    if (is_param) {
      scope.set(k, v);
    } else if (k == "caller") {
      scope.set("caller", v);
    } else {
      kwargs.dict_data().set(k, v);
    }
  }
  if (caller) scope.set("caller", *caller);
  for (size_t i = 0; i < params.size(); ++i) {
    bool bound = false;
    for (const auto& kv : scope.vars) bound = bound || kv.first == params[i].name;
    if (bound) continue;
    if (params[i].default_value) {
      scope.set(params[i].name, eval(*params[i].default_value, scope));
    } else {
      scope.set(params[i].name, Value::undefined(params[i].name));
    }
  }
  scope.set("varargs", Value::tuple(std::move(varargs)));
  scope.set("kwargs", std::move(kwargs));
  return capture(def.bodies[0], scope);
}

Value Interpreter::call(const Value& fn, CallArgs& args) {
  if (fn.is_undefined()) {
    const std::string n = fn.undefined_name();
    fail(Kind::Undefined, n.empty() ? "call of an undefined value" : "'" + n + "' is undefined");
  }
  if (fn.is_loop()) {
    const LoopData& l = fn.loop_data();
    if (!l.recurse)
      fail(Kind::Type, "the loop must have the 'recursive' marker to be called recursively");
    const Location saved = loc_;
    Value r = l.recurse(*this, args);
    loc_ = saved;
    return r;
  }
  if (!fn.is_callable()) fail(Kind::Type, "'" + fn.type_name() + "' object is not callable");
  Callable& c = fn.callable_data();
  const Location saved = loc_;
  Value r = c.fn(*this, args);
  loc_ = saved;
  return r;
}

void Interpreter::eval_args(const Expr& e, size_t first, Scope& scope, CallArgs& out) {
  out.positional.reserve(e.args.size() - first);
  for (size_t i = first; i < e.args.size(); ++i) out.positional.push_back(eval(*e.args[i], scope));
  for (const auto& [k, v] : e.kwargs) out.keyword.emplace_back(k, eval(*v, scope));
}

Value Interpreter::eval_name(const Expr& e, Scope& scope) {
  if (Value* v = scope.find(e.name)) return *v;
  if (const Value* g = find_global(e.name)) return *g;
  return Value::undefined(e.name);
}

Value Interpreter::get_attr(const Value& obj, const std::string& name, Location loc) {
  loc_ = loc;
  switch (obj.type()) {
    case Value::Type::Undefined: {
      const std::string n = obj.undefined_name();
      fail(Kind::Undefined,
           n.empty() ? "'" + name + "' of an undefined value" : "'" + n + "' is undefined");
    }
    case Value::Type::Dict: {
      if (!obj.dict_data().is_namespace && has_method(obj, name)) return bound_method(obj, name);
      if (const Value* v = obj.dict_data().find(name)) return *v;
      return Value::undefined("'dict object' has no attribute '" + name + "'");
    }
    case Value::Type::Loop: {
      if (name == "cycle") return bound_method(obj, name);
      return obj.loop_data().get(name);
    }
    case Value::Type::String:
    case Value::Type::List:
      if (obj.is_list())
        if (const Value* f = obj.list_data().field(name)) return *f;
      if (has_method(obj, name)) return bound_method(obj, name);
      return Value::undefined("'" + obj.type_name() + " object' has no attribute '" + name + "'");
    default:
      return Value::undefined("'" + obj.type_name() + " object' has no attribute '" + name + "'");
  }
}

namespace {

// Python index normalisation; false when out of range.
bool normalise_index(int64_t& i, size_t n) {
  if (i < 0) i += static_cast<int64_t>(n);
  return i >= 0 && static_cast<size_t>(i) < n;
}

}  // namespace

Value Interpreter::get_item(const Value& obj, const Value& key, Location loc) {
  loc_ = loc;
  switch (obj.type()) {
    case Value::Type::Undefined: {
      const std::string n = obj.undefined_name();
      fail(Kind::Undefined, n.empty() ? "item of an undefined value" : "'" + n + "' is undefined");
    }
    case Value::Type::Dict:
      // Keys match as in Python (d[0] and d["0"] differ); an unhashable key finds nothing
      // (Jinja's getitem swallows Python's TypeError), and a str falls back to the methods.
      if (is_hashable(key))
        if (const Value* v = obj.dict_data().find(key)) return *v;
      if (key.is_string() && !obj.dict_data().is_namespace && has_method(obj, key.str()))
        return bound_method(obj, key.str());
      return Value::undefined("'dict object' has no attribute '" + key.to_str() + "'");
    case Value::Type::List: {
      const ListData& l = obj.list_data();
      if (key.is_number() && !key.is_float() && !l.is_generator) {
        int64_t i = key.as_int();
        if (normalise_index(i, l.items.size())) return l.items[static_cast<size_t>(i)];
        return Value::undefined(obj.type_name() + " object has no element " + key.to_str());
      }
      if (key.is_string() && has_method(obj, key.str())) return bound_method(obj, key.str());
      return Value::undefined(obj.type_name() + " object has no element " + key.to_str());
    }
    case Value::Type::String: {
      if (key.is_number() && !key.is_float()) {
        const std::string& s = obj.str();
        int64_t i = key.as_int();
        auto off = utf8_offsets(s);
        if (normalise_index(i, off.size() - 1)) {
          const size_t u = static_cast<size_t>(i);
          return Value::string(s.substr(off[u], off[u + 1] - off[u]),
                               obj.str_ref().fully_trusted());
        }
        return Value::undefined("string index out of range");
      }
      if (key.is_string() && has_method(obj, key.str())) return bound_method(obj, key.str());
      return Value::undefined("str object has no element " + key.to_str());
    }
    case Value::Type::Loop:
      if (key.is_string()) return get_attr(obj, key.str(), loc);
      return Value::undefined();
    default:
      return Value::undefined("'" + obj.type_name() + " object' has no element " + key.to_str());
  }
}

Value Interpreter::slice(const Value& obj, const Value& start, const Value& stop, const Value& step,
                         Location loc) {
  loc_ = loc;
  if (obj.is_undefined()) {
    const std::string n = obj.undefined_name();
    fail(Kind::Undefined, n.empty() ? "slice of an undefined value" : "'" + n + "' is undefined");
  }
  auto as_index = [&](const Value& v, const char* what) -> std::optional<int64_t> {
    if (v.is_undefined() || v.is_none()) return std::nullopt;
    if (!v.is_number() || v.is_float())
      fail(Kind::Type, std::string("slice ") + what + " must be an integer or None");
    return v.as_int();
  };
  const auto a = as_index(start, "start");
  const auto b = as_index(stop, "stop");
  const auto c = as_index(step, "step");
  const int64_t st = c.value_or(1);
  if (st == 0) fail(Kind::Runtime, "slice step cannot be zero");
  size_t n = 0;
  std::vector<uint32_t> off;
  if (obj.is_string()) {
    off = utf8_offsets(obj.str());
    n = off.size() - 1;
  } else if (obj.is_list() && !obj.list_data().is_generator) {
    n = obj.list_data().items.size();
  } else {
    return Value::undefined();
  }
  const auto len = static_cast<int64_t>(n);
  auto clamp = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v;
    if (x < 0) x += len;
    if (st > 0) return std::clamp<int64_t>(x, 0, len);
    return std::clamp<int64_t>(x, -1, len - 1);
  };
  const int64_t lo = clamp(a, st > 0 ? 0 : len - 1);
  const int64_t hi = clamp(b, st > 0 ? len : -1);
  std::vector<size_t> picks;
  for (int64_t i = lo; st > 0 ? i < hi : i > hi; i += st) picks.push_back(static_cast<size_t>(i));
  charge(picks.size());
  if (obj.is_string()) {
    const std::string& s = obj.str();
    std::string out;
    if (st == 1 && !picks.empty()) {
      out = s.substr(off[picks.front()], off[picks.back() + 1] - off[picks.front()]);
    } else {
      for (size_t i : picks) out.append(s, off[i], off[i + 1] - off[i]);
    }
    return Value::string(std::move(out), obj.str_ref().fully_trusted());
  }
  std::vector<Value> items;
  items.reserve(picks.size());
  for (size_t i : picks) items.push_back(obj.list_data().items[i]);
  return obj.list_data().is_tuple ? Value::tuple(std::move(items)) : Value::list(std::move(items));
}

Value Interpreter::eval_call(const Expr& e, Scope& scope) {
  const Expr& callee = *e.args[0];
  // obj.method(...) calls the method directly (no bound-method object).
  if (callee.kind == Expr::Kind::GetAttr) {
    Value obj = eval(*callee.args[0], scope);
    if ((obj.is_string() || obj.is_list() || (obj.is_dict() && !obj.dict_data().is_namespace) ||
         obj.is_loop()) &&
        (obj.is_loop() ? callee.name == "cycle" : has_method(obj, callee.name))) {
      CallArgs args;
      eval_args(e, 1, scope, args);
      loc_ = e.loc;
      return call_method(*this, obj, callee.name, args);
    }
    Value fn = get_attr(obj, callee.name, callee.loc);
    CallArgs args;
    eval_args(e, 1, scope, args);
    loc_ = e.loc;
    return call(fn, args);
  }
  Value fn = eval(callee, scope);
  CallArgs args;
  eval_args(e, 1, scope, args);
  loc_ = e.loc;
  return call(fn, args);
}

// a + b + c + ...: strings are appended into one buffer instead of a new string per `+`;
// operands are evaluated in order and any non-string step goes through binary(), so values
// and errors are those of the pairwise evaluation.
Value Interpreter::eval_plus_chain(const Expr& e, Scope& scope) {
  std::vector<const Expr*> chain;
  const Expr* cur = &e;
  while (cur->kind == Expr::Kind::Binary && cur->op == "+" && chain.size() < 256) {
    chain.push_back(cur);
    cur = cur->args[0].get();
  }
  Value acc = eval(*cur, scope);
  std::shared_ptr<StrData> buf;  // the accumulated string while every operand is a string
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    Value b = eval(*(*it)->args[1], scope);
    if (b.is_string() && (buf || acc.is_string())) {
      if (!buf) {
        buf = std::make_shared<StrData>(acc.str_ref());
        acc = Value();
      }
      const StrData& y = b.str_ref();
      loc_ = (*it)->loc;
      check_size(buf->s.size() + y.s.size());
      append_ranges(buf->trusted, buf->s.size(), y.trusted);
      buf->s += y.s;
      continue;
    }
    if (buf) {
      acc = Value::string(std::move(buf));
      buf.reset();
    }
    acc = binary("+", acc, b, (*it)->loc);
  }
  if (buf) return Value::string(std::move(buf));
  return acc;
}

Value Interpreter::eval(const Expr& e, Scope& scope) {
  struct DepthGuard {
    int& d;
    explicit DepthGuard(int& depth) : d(depth) { ++d; }
    ~DepthGuard() { --d; }
  } guard(eval_depth_);
  if (eval_depth_ > 1000) {
    loc_ = e.loc;
    fail(Kind::Limit, "expression evaluation nested too deeply");
  }
  switch (e.kind) {
    case Expr::Kind::Const:
      return e.value;
    case Expr::Kind::Name:
      return eval_name(e, scope);
    case Expr::Kind::GetAttr:
      return get_attr(eval(*e.args[0], scope), e.name, e.loc);
    case Expr::Kind::GetItem:
      return eval_get_item(e, scope);
    case Expr::Kind::Slice:
      return eval_slice(e, scope);
    case Expr::Kind::Call:
      return eval_call(e, scope);
    case Expr::Kind::Filter:
      return eval_filter(e, scope);
    case Expr::Kind::Test:
      return eval_test(e, scope);
    case Expr::Kind::Neg:
    case Expr::Kind::Pos:
      return eval_unary(e, scope);
    case Expr::Kind::Not:
      return Value::boolean(!eval(*e.args[0], scope).truthy());
    case Expr::Kind::And:
    case Expr::Kind::Or:
      return eval_and_or(e, scope);
    case Expr::Kind::Binary:
      return eval_binary(e, scope);
    case Expr::Kind::Concat:
      return eval_concat(e, scope);
    case Expr::Kind::Compare:
      return eval_compare(e, scope);
    case Expr::Kind::CondExpr:
      return eval_cond(e, scope);
    case Expr::Kind::List:
    case Expr::Kind::Tuple:
      return eval_list_or_tuple(e, scope);
    case Expr::Kind::Dict:
      return eval_dict(e, scope);
  }
  return Value::undefined();
}

Value Interpreter::eval_get_item(const Expr& e, Scope& scope) {
  Value obj = eval(*e.args[0], scope);
  Value key = eval(*e.args[1], scope);
  return get_item(obj, key, e.loc);
}

Value Interpreter::eval_slice(const Expr& e, Scope& scope) {
  Value obj = eval(*e.args[0], scope);
  Value parts[3];
  for (int i = 0; i < 3; ++i)
    if (e.args[static_cast<size_t>(i) + 1])
      parts[i] = eval(*e.args[static_cast<size_t>(i) + 1], scope);
  return slice(obj, parts[0], parts[1], parts[2], e.loc);
}

// A filter's or test's subject (args[0]) and then its arguments, evaluated in that order.
Value Interpreter::eval_subject_and_args(const Expr& e, Scope& scope, CallArgs& args) {
  Value v = eval(*e.args[0], scope);
  eval_args(e, 1, scope, args);
  loc_ = e.loc;
  return v;
}

Value Interpreter::eval_filter(const Expr& e, Scope& scope) {
  CallArgs args;
  const Value v = eval_subject_and_args(e, scope, args);
  return apply_filter(*this, e.name, v, args);
}

Value Interpreter::eval_test(const Expr& e, Scope& scope) {
  CallArgs args;
  const Value v = eval_subject_and_args(e, scope, args);
  const bool r = apply_test(*this, e.name, v, args);
  return Value::boolean(e.negated ? !r : r);
}

// -x and +x (+True is 1, as in Python).
Value Interpreter::eval_unary(const Expr& e, Scope& scope) {
  Value v = eval(*e.args[0], scope);
  loc_ = e.loc;
  if (v.is_undefined()) fail(Kind::Undefined, "operand of unary minus is undefined");
  if (!v.is_number()) fail(Kind::Type, "bad operand type for unary -: '" + v.type_name() + "'");
  if (e.kind == Expr::Kind::Pos) return v.is_bool() ? Value::integer(v.as_int()) : v;
  if (v.is_float()) return Value::number(-v.as_float());
  if (v.as_int() == std::numeric_limits<int64_t>::min())
    return Value::number(-static_cast<double>(v.as_int()));
  return Value::integer(-v.as_int());
}

// `a and b`, `a or b`: Python's short circuit, yielding an operand rather than a bool.
Value Interpreter::eval_and_or(const Expr& e, Scope& scope) {
  Value a = eval(*e.args[0], scope);
  if (a.truthy() == (e.kind == Expr::Kind::Or)) return a;
  return eval(*e.args[1], scope);
}

Value Interpreter::eval_binary(const Expr& e, Scope& scope) {
  if (e.op == "+") return eval_plus_chain(e, scope);
  Value a = eval(*e.args[0], scope);
  Value b = eval(*e.args[1], scope);
  return binary(e.op, a, b, e.loc);
}

// a ~ b ~ ...: str() of each operand, appended into one string (template-text marks kept).
Value Interpreter::eval_concat(const Expr& e, Scope& scope) {
  auto d = std::make_shared<StrData>();
  for (const auto& part : e.args) {
    Value v = eval(*part, scope);
    if (v.is_string()) {
      const StrData& x = v.str_ref();
      check_size(d->s.size() + x.s.size());
      append_ranges(d->trusted, d->s.size(), x.trusted);
      d->s += x.s;
    } else {
      std::string s = v.to_str();
      check_size(d->s.size() + s.size());
      d->s += s;
    }
  }
  return Value::string(std::move(d));
}

// a < b < c: each comparison in turn, stopping at the first false one (as Python chains them).
Value Interpreter::eval_compare(const Expr& e, Scope& scope) {
  Value left = eval(*e.args[0], scope);
  for (size_t i = 0; i < e.ops.size(); ++i) {
    Value right = eval(*e.args[i + 1], scope);
    if (!compare(e.ops[i], left, right, e.loc)) return Value::boolean(false);
    left = std::move(right);
  }
  return Value::boolean(true);
}

// `a if cond else b`; without else, undefined when cond is false.
Value Interpreter::eval_cond(const Expr& e, Scope& scope) {
  if (eval(*e.args[1], scope).truthy()) return eval(*e.args[0], scope);
  if (e.args[2]) return eval(*e.args[2], scope);
  return Value::undefined();
}

Value Interpreter::eval_list_or_tuple(const Expr& e, Scope& scope) {
  std::vector<Value> items;
  items.reserve(e.args.size());
  for (const auto& a : e.args) items.push_back(eval(*a, scope));
  charge(items.size());
  return e.kind == Expr::Kind::List ? Value::list(std::move(items))
                                    : Value::tuple(std::move(items));
}

Value Interpreter::eval_dict(const Expr& e, Scope& scope) {
  Value d = Value::dict();
  for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
    Value k = eval(*e.args[i], scope);
    Value v = eval(*e.args[i + 1], scope);
    if (!is_hashable(k)) {
      loc_ = e.args[i]->loc;
      fail(Kind::Type, "unhashable type: '" + k.type_name() + "'");
    }
    d.dict_data().set(std::move(k), std::move(v));
  }
  charge(e.args.size());
  return d;
}

}  // namespace hearth::chat
