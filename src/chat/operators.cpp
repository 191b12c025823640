// Python's arithmetic (+ - * / // % **) and comparison operators on template values: ints stay
// ints until they would overflow (then floats, where Python would grow a big int), and errors
// read as Python's.
#include <algorithm>
#include <cmath>
#include <limits>

#include "chat/builtins.h"
#include "chat/interpreter.h"

namespace hearth::chat {
namespace {

using Kind = TemplateError::Kind;

bool checked_add(int64_t a, int64_t b, int64_t& r) {
  return !__builtin_add_overflow(a, b, &r);
}
bool checked_sub(int64_t a, int64_t b, int64_t& r) {
  return !__builtin_sub_overflow(a, b, &r);
}
bool checked_mul(int64_t a, int64_t b, int64_t& r) {
  return !__builtin_mul_overflow(a, b, &r);
}

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

bool numbers(const Value& a, const Value& b) {
  return a.is_number() && b.is_number();
}
// Two numbers of which one is a float: the operation is done in floats.
bool floats(const Value& a, const Value& b) {
  return numbers(a, b) && (a.is_float() || b.is_float());
}

[[noreturn]] void operand_error(Interpreter& in, const char* op, const Value& a, const Value& b) {
  in.fail(Kind::Type, std::string("unsupported operand type(s) for ") + op + ": '" + a.type_name() +
                          "' and '" + b.type_name() + "'");
}

// str + str keeps both operands' template-text marks.
Value concat_strings(Interpreter& in, const Value& a, const Value& b) {
  const StrData& x = a.str_ref();
  const StrData& y = b.str_ref();
  in.check_size(x.s.size() + y.s.size());
  auto d = std::make_shared<StrData>();
  d->s.reserve(x.s.size() + y.s.size());
  d->s = x.s;
  d->s += y.s;
  d->trusted = x.trusted;
  append_ranges(d->trusted, x.s.size(), y.trusted);
  return Value::string(std::move(d));
}

// list + list and tuple + tuple (not a list and a tuple, nor generators).
bool same_kind_of_sequence(const Value& a, const Value& b) {
  return a.is_list() && b.is_list() && !a.list_data().is_generator && !b.list_data().is_generator &&
         a.list_data().is_tuple == b.list_data().is_tuple;
}

Value add(Interpreter& in, const Value& a, const Value& b) {
  if (numbers(a, b)) {
    int64_t r;
    if (!floats(a, b) && checked_add(a.as_int(), b.as_int(), r)) return Value::integer(r);
    return Value::number(a.as_float() + b.as_float());
  }
  if (a.is_string() && b.is_string()) return concat_strings(in, a, b);
  if (same_kind_of_sequence(a, b)) {
    std::vector<Value> items = a.list_data().items;
    in.charge(items.size() + b.list_data().items.size());
    items.insert(items.end(), b.list_data().items.begin(), b.list_data().items.end());
    return a.list_data().is_tuple ? Value::tuple(std::move(items)) : Value::list(std::move(items));
  }
  if (a.is_string())
    in.fail(Kind::Type, "can only concatenate str (not \"" + b.type_name() + "\") to str");
  if (a.is_list())
    in.fail(Kind::Type, "can only concatenate list (not \"" + b.type_name() + "\") to list");
  operand_error(in, "+", a, b);
}

Value subtract(Interpreter& in, const Value& a, const Value& b) {
  if (!numbers(a, b)) operand_error(in, "-", a, b);
  int64_t r;
  if (!floats(a, b) && checked_sub(a.as_int(), b.as_int(), r)) return Value::integer(r);
  return Value::number(a.as_float() - b.as_float());
}

// str * n and list * n (either order); n < 0 repeats zero times. The size is checked before
// anything is built.
Value repeat(Interpreter& in, const Value& a, const Value& b) {
  const Value* seq = a.is_number() ? &b : &a;
  const Value* cnt = a.is_number() ? &a : &b;
  if (!cnt->is_number() || cnt->is_float()) operand_error(in, "*", a, b);
  int64_t n = std::max<int64_t>(cnt->as_int(), 0);
  // An empty sequence repeats to itself: no loop of n empty appends (n can be 2^63 - 1, a
  // hang no size check would catch).
  if ((seq->is_string() && seq->str_ref().s.empty()) ||
      (seq->is_list() && !seq->list_data().is_generator && seq->list_data().items.empty()))
    n = 0;
  const Limits& limits = in.options().limits;
  if (seq->is_string()) {
    const StrData& x = seq->str_ref();
    if (n > 0 && x.s.size() > 0 && static_cast<uint64_t>(n) > limits.max_output_bytes / x.s.size())
      in.check_size(limits.max_output_bytes + 1);
    const size_t total = x.s.size() * static_cast<size_t>(n);
    in.check_size(total);
    std::string out;
    out.reserve(total);
    for (int64_t i = 0; i < n; ++i) out += x.s;
    return Value::string(std::move(out), x.fully_trusted());
  }
  if (seq->is_list() && !seq->list_data().is_generator) {
    const auto& items = seq->list_data().items;
    if (!items.empty() && static_cast<uint64_t>(n) > limits.max_work / items.size())
      in.charge(limits.max_work + 1);
    in.charge(items.size() * static_cast<uint64_t>(n));
    std::vector<Value> out;
    for (int64_t i = 0; i < n; ++i) out.insert(out.end(), items.begin(), items.end());
    return seq->list_data().is_tuple ? Value::tuple(std::move(out)) : Value::list(std::move(out));
  }
  operand_error(in, "*", a, b);
}

Value multiply(Interpreter& in, const Value& a, const Value& b) {
  if (!numbers(a, b)) return repeat(in, a, b);
  int64_t r;
  if (!floats(a, b) && checked_mul(a.as_int(), b.as_int(), r)) return Value::integer(r);
  return Value::number(a.as_float() * b.as_float());
}

Value divide(Interpreter& in, const Value& a, const Value& b) {
  if (!numbers(a, b)) operand_error(in, "/", a, b);
  if (b.as_float() == 0) in.fail(Kind::Runtime, "division by zero");
  return Value::number(a.as_float() / b.as_float());
}

Value floor_divide(Interpreter& in, const Value& a, const Value& b) {
  if (!numbers(a, b)) operand_error(in, "//", a, b);
  if (b.as_float() == 0) in.fail(Kind::Runtime, "integer division or modulo by zero");
  if (floats(a, b)) return Value::number(std::floor(a.as_float() / b.as_float()));
  if (a.as_int() == std::numeric_limits<int64_t>::min() && b.as_int() == -1)
    return Value::number(-static_cast<double>(a.as_int()));
  return Value::integer(floor_div(a.as_int(), b.as_int()));
}

// Python's %: the result takes the divisor's sign; on a str, printf-style formatting.
Value modulo(Interpreter& in, const Value& a, const Value& b) {
  if (a.is_string()) return python_percent_format(in, a, b);
  if (!numbers(a, b)) operand_error(in, "%", a, b);
  if (b.as_float() == 0) in.fail(Kind::Runtime, "integer division or modulo by zero");
  if (floats(a, b)) {
    const double x = a.as_float(), y = b.as_float();
    double m = std::fmod(x, y);
    if (m != 0 && ((m < 0) != (y < 0))) m += y;
    return Value::number(m);
  }
  if (b.as_int() == -1) return Value::integer(0);
  const int64_t x = a.as_int(), y = b.as_int();
  int64_t m = x % y;
  if (m != 0 && ((m < 0) != (y < 0))) m += y;
  return Value::integer(m);
}

// int ** non-negative int by squaring while it fits; otherwise pow() in floats.
Value power(Interpreter& in, const Value& a, const Value& b) {
  if (!numbers(a, b)) operand_error(in, "**", a, b);
  if (!floats(a, b) && b.as_int() >= 0) {
    int64_t base = a.as_int(), e = b.as_int(), r = 1;
    bool ok = true;
    while (e > 0 && ok) {
      if (e & 1) ok = checked_mul(r, base, r);
      e >>= 1;
      if (e > 0 && ok) ok = checked_mul(base, base, base);
    }
    if (ok) return Value::integer(r);
  }
  return Value::number(std::pow(a.as_float(), b.as_float()));
}

using ArithmeticFn = Value (*)(Interpreter& in, const Value& a, const Value& b);
struct NamedOperator {
  std::string_view op;
  ArithmeticFn fn;
};

constexpr NamedOperator kArithmetic[] = {
    {"+", add},           {"-", subtract}, {"*", multiply}, {"/", divide},
    {"//", floor_divide}, {"%", modulo},   {"**", power},
};

}  // namespace

Value Interpreter::binary(const std::string& op, const Value& a, const Value& b, Location loc) {
  loc_ = loc;
  if (a.is_undefined() || b.is_undefined()) {
    const std::string n = (a.is_undefined() ? a : b).undefined_name();
    fail(Kind::Undefined,
         n.empty() ? "operand of '" + op + "' is undefined" : "'" + n + "' is undefined");
  }
  for (const NamedOperator& o : kArithmetic)
    if (o.op == op) return o.fn(*this, a, b);
  fail(Kind::Runtime, "unknown operator " + op);
}

bool Interpreter::compare(const std::string& op, const Value& a, const Value& b, Location loc) {
  loc_ = loc;
  if (op == "==") return py_equal(a, b);
  if (op == "!=") return !py_equal(a, b);
  if (op == "in" || op == "notin") {
    bool found = false;
    switch (b.type()) {
      case Value::Type::Undefined:
        found = false;
        break;
      case Value::Type::String:
        if (!a.is_string())
          fail(Kind::Type, "'in <string>' requires string as left operand, not " + a.type_name());
        found = b.str().find(a.str()) != std::string::npos;
        break;
      case Value::Type::List:
        for (const auto& x : b.list_data().items) {
          if (py_equal(a, x)) {
            found = true;
            break;
          }
        }
        break;
      case Value::Type::Dict:
        if (!is_hashable(a)) fail(Kind::Type, "unhashable type: '" + a.type_name() + "'");
        found = b.dict_data().find(a) != nullptr;
        break;
      default:
        fail(Kind::Type, "argument of type '" + b.type_name() + "' is not iterable");
    }
    return op == "in" ? found : !found;
  }
  // Ordering.
  if (a.is_undefined() || b.is_undefined())
    fail(Kind::Undefined, "comparison with an undefined value");
  int c = 0;
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) {
      const double x = a.as_float(), y = b.as_float();
      c = x < y ? -1 : x > y ? 1 : 0;
      if (std::isnan(x) || std::isnan(y)) return false;
    } else {
      c = a.as_int() < b.as_int() ? -1 : a.as_int() > b.as_int() ? 1 : 0;
    }
  } else if (a.is_string() && b.is_string()) {
    c = a.str().compare(b.str());
  } else if (a.is_list() && b.is_list()) {
    const auto& x = a.list_data().items;
    const auto& y = b.list_data().items;
    size_t i = 0;
    for (; i < x.size() && i < y.size(); ++i) {
      if (py_equal(x[i], y[i])) continue;
      return compare(op, x[i], y[i], loc);
    }
    c = x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
  } else {
    fail(Kind::Type, "'" + op + "' not supported between instances of '" + a.type_name() +
                         "' and '" + b.type_name() + "'");
  }
  if (op == "<") return c < 0;
  if (op == "<=") return c <= 0;
  if (op == ">") return c > 0;
  return c >= 0;
}

}  // namespace hearth::chat
