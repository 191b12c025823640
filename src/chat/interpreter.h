// Walks a parsed template, producing text and the trusted byte ranges. Internal to chat/; the
// builtins (filters, tests, methods, globals) call back into it for errors and limits.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "chat/ast.h"
#include "chat/parser.h"
#include "chat/template.h"
#include "chat/value.h"

namespace hearth::chat {

class Interpreter {
 public:
  Interpreter(const Program& program, const RenderOptions& options);
  Rendered run(const nlohmann::ordered_json& context);
  Rendered run(Variables vars);

  [[noreturn]] void fail(TemplateError::Kind kind, const std::string& message) const;
  // Counts work against Limits::max_work.
  void charge(uint64_t units);
  // A string result no larger than the output limit.
  void check_size(size_t bytes);
  Value call(const Value& fn, CallArgs& args);
  const RenderOptions& options() const { return opt_; }
  void set_location(Location l) { loc_ = l; }

  struct Scope {
    std::vector<std::pair<std::string, Value>> vars;
    Scope* parent = nullptr;
    Value* find(std::string_view name);
    void set(const std::string& name, Value v);
  };
  struct Out {
    std::string text;
    Ranges ranges;
  };
  enum class Flow { Normal, Break, Continue };

  Value call_macro(const Stmt& def, CallArgs& args, const Value* caller);
  Value capture(const Body& body, Scope& scope);

 private:
  Flow exec(const Body& body, Scope& scope);
  Flow exec_stmt(const Stmt& s, Scope& scope);
  Flow exec_if(const Stmt& s, Scope& scope);
  void exec_set(const Stmt& s, Scope& scope);
  void define_macro(const Stmt& s, Scope& scope);
  void exec_call_block(const Stmt& s, Scope& scope);
  Value make_caller(const Stmt& s, Scope& scope, std::shared_ptr<bool> alive);
  Flow exec_scope(const Stmt& s, Scope& scope);
  void exec_for(const Stmt& s, Scope& scope, Flow& flow);
  void run_loop(const Stmt& s, Scope& scope, const Value& iterable, size_t depth0);
  Value recurse_loop(const Stmt& s, Scope& scope, CallArgs& args, size_t depth0);
  template <typename Render>
  Value capture_output(Render&& render);
  Value apply_filters(const std::vector<ExprPtr>& filters, Value v, Scope& scope);
  void emit(const Value& v);
  void emit_text(const std::string& text);

  // eval dispatches on the node kind to one eval_* per kind (or family of kinds).
  Value eval(const Expr& e, Scope& scope);
  Value eval_name(const Expr& e, Scope& scope);
  Value eval_get_item(const Expr& e, Scope& scope);
  Value eval_slice(const Expr& e, Scope& scope);
  Value eval_subject_and_args(const Expr& e, Scope& scope, CallArgs& args);
  Value eval_filter(const Expr& e, Scope& scope);
  Value eval_test(const Expr& e, Scope& scope);
  Value eval_unary(const Expr& e, Scope& scope);
  Value eval_and_or(const Expr& e, Scope& scope);
  Value eval_binary(const Expr& e, Scope& scope);
  Value eval_plus_chain(const Expr& e, Scope& scope);
  Value eval_concat(const Expr& e, Scope& scope);
  Value eval_compare(const Expr& e, Scope& scope);
  Value eval_cond(const Expr& e, Scope& scope);
  Value eval_list_or_tuple(const Expr& e, Scope& scope);
  Value eval_dict(const Expr& e, Scope& scope);
  Value eval_call(const Expr& e, Scope& scope);
  void eval_args(const Expr& e, size_t first, Scope& scope, CallArgs& out);
  Value get_attr(const Value& obj, const std::string& name, Location loc);
  Value get_item(const Value& obj, const Value& key, Location loc);
  Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step,
              Location loc);
  // Python's arithmetic and comparison operators (operators.cpp).
  Value binary(const std::string& op, const Value& a, const Value& b, Location loc);
  bool compare(const std::string& op, const Value& a, const Value& b, Location loc);

  // One level of call nesting, held for the call's duration.
  class CallDepth {
   public:
    explicit CallDepth(int& depth) : depth_(depth) { ++depth_; }
    ~CallDepth() { --depth_; }
    CallDepth(const CallDepth&) = delete;
    CallDepth& operator=(const CallDepth&) = delete;

   private:
    int& depth_;
  };
  CallDepth enter_call(const char* what);

  const Program& program_;
  const RenderOptions& opt_;
  Scope root_;
  std::vector<Out> outs_;
  Location loc_;
  uint64_t work_ = 0;
  uint64_t iterations_ = 0;
  int call_depth_ = 0;
  int eval_depth_ = 0;
};

// Appends b to a, keeping trusted ranges (adjacent ranges merge).
void append_ranges(Ranges& a, size_t a_size, const Ranges& b);
// A string derived from inputs: trusted only when every input was.
Value derived_string(std::string s, bool trusted);

}  // namespace hearth::chat
