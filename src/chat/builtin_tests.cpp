// Jinja's tests (`x is name(args)`, and the test names select/reject take), one function each,
// looked up by name in one table.
#include <cctype>
#include <cmath>
#include <unordered_map>

#include "chat/builtins.h"
#include "chat/py_string.h"

namespace hearth::chat {
namespace {

using Kind = TemplateError::Kind;
using TestFn = bool (*)(Interpreter& in, const Value& v, CallArgs& a);

// The test's argument (`x is eq(other)`); Undefined when absent.
const Value& other(const CallArgs& a) {
  return call_arg(a, 0, "other");
}

// --- types -----------------------------------------------------------------------------------
bool defined(Interpreter&, const Value& v, CallArgs&) {
  return !v.is_undefined();
}
// undefined, none, boolean, string, number, integer, float: the value's type.
template <bool (Value::*Is)() const>
bool of_type(Interpreter&, const Value& v, CallArgs&) {
  return (v.*Is)();
}
bool is_true(Interpreter&, const Value& v, CallArgs&) {
  return v.is_bool() && v.as_bool();
}
bool is_false(Interpreter&, const Value& v, CallArgs&) {
  return v.is_bool() && !v.as_bool();
}
bool mapping(Interpreter&, const Value& v, CallArgs&) {
  return v.is_dict() && !v.dict_data().is_namespace;
}
bool iterable(Interpreter&, const Value& v, CallArgs&) {
  return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined() || v.is_loop();
}
bool sequence(Interpreter&, const Value& v, CallArgs&) {
  return v.is_string() || (v.is_list() && !v.list_data().is_generator) ||
         (v.is_dict() && !v.dict_data().is_namespace) || v.is_undefined();
}
bool callable(Interpreter&, const Value& v, CallArgs&) {
  return v.is_callable() || v.is_loop();  // LoopContext has __call__
}
// Nothing is ever escaped: output is not autoescaped.
bool escaped(Interpreter&, const Value&, CallArgs&) {
  return false;
}
bool lower(Interpreter&, const Value& v, CallArgs&) {
  return v.is_string() && py::is_lower(v.str());
}
bool upper(Interpreter&, const Value& v, CallArgs&) {
  return v.is_string() && py::is_upper(v.str());
}

// --- arithmetic ------------------------------------------------------------------------------
void require_integer(Interpreter& in, const char* test, const Value& v) {
  if (!v.is_number() || v.is_float())
    in.fail(Kind::Type, "test '" + std::string(test) + "' needs an integer, not " + v.type_name());
}
bool even(Interpreter& in, const Value& v, CallArgs&) {
  require_integer(in, "even", v);
  return v.as_int() % 2 == 0;
}
bool odd(Interpreter& in, const Value& v, CallArgs&) {
  require_integer(in, "odd", v);
  return v.as_int() % 2 != 0;
}
// An int value takes an int or a float divisor, a float value (as Python's %) any number.
bool divisibleby(Interpreter& in, const Value& v, CallArgs& a) {
  const Value& x = other(a);
  if (v.is_float()) {
    const double d = x.as_float();
    return d != 0 && std::fmod(v.as_float(), d) == 0;
  }
  require_integer(in, "divisibleby", v);
  if (!x.is_number()) in.fail(Kind::Type, "divisibleby needs a number");
  if (x.is_float()) return x.as_float() != 0 && std::fmod(v.as_float(), x.as_float()) == 0;
  if (x.as_int() == 0) in.fail(Kind::Runtime, "integer division or modulo by zero");
  if (x.as_int() == -1) return true;
  return v.as_int() % x.as_int() == 0;
}

// --- comparisons -----------------------------------------------------------------------------
bool eq(Interpreter&, const Value& v, CallArgs& a) {
  return py_equal(v, other(a));
}
bool ne(Interpreter&, const Value& v, CallArgs& a) {
  return !py_equal(v, other(a));
}
// Python's `is`: the same container or string object; other values compare equal.
bool sameas(Interpreter&, const Value& v, CallArgs& a) {
  const Value& x = other(a);
  if (v.type() != x.type()) return false;
  if (v.is_list()) return &v.list_data() == &x.list_data();
  if (v.is_dict()) return &v.dict_data() == &x.dict_data();
  if (v.is_string()) return v.str_data() == x.str_data();
  return py_equal(v, x);
}
// lt/le/gt/ge order two numbers or two strings: <0, 0 or >0 as v is below, equal to or above.
int order(Interpreter& in, const Value& v, CallArgs& a) {
  const Value& x = other(a);
  const bool both_num = v.is_number() && x.is_number();
  const bool both_str = v.is_string() && x.is_string();
  if (!both_num && !both_str)
    in.fail(Kind::Type, "comparison not supported between instances of '" + v.type_name() +
                            "' and '" + x.type_name() + "'");
  if (both_num) return v.as_float() < x.as_float() ? -1 : v.as_float() > x.as_float() ? 1 : 0;
  return v.str().compare(x.str());
}
bool lt(Interpreter& in, const Value& v, CallArgs& a) {
  return order(in, v, a) < 0;
}
bool le(Interpreter& in, const Value& v, CallArgs& a) {
  return order(in, v, a) <= 0;
}
bool gt(Interpreter& in, const Value& v, CallArgs& a) {
  return order(in, v, a) > 0;
}
bool ge(Interpreter& in, const Value& v, CallArgs& a) {
  return order(in, v, a) >= 0;
}
// `v is in(x)`: Python's `v in x`.
bool in_container(Interpreter& in, const Value& v, CallArgs& a) {
  const Value& x = other(a);
  if (x.is_string()) return v.is_string() && x.str().find(v.str()) != std::string::npos;
  if (x.is_list()) {
    for (const auto& e : x.list_data().items)
      if (py_equal(e, v)) return true;
    return false;
  }
  if (x.is_dict()) {
    if (!is_hashable(v)) in.fail(Kind::Type, "unhashable type: '" + v.type_name() + "'");
    return x.dict_data().find(v) != nullptr;
  }
  if (x.is_undefined()) return false;
  in.fail(Kind::Type, "argument of type '" + x.type_name() + "' is not iterable");
}

// --- names -----------------------------------------------------------------------------------
bool filter(Interpreter&, const Value& v, CallArgs&) {
  return v.is_string() && has_filter(v.str());
}
bool test(Interpreter&, const Value& v, CallArgs&);

struct NamedTest {
  std::string_view name;
  TestFn fn;
};

// The operator spellings (==, <, ...) are reachable through select/reject only: `is` must be
// followed by a name.
constexpr NamedTest kTests[] = {
    {"defined", defined},
    {"undefined", of_type<&Value::is_undefined>},
    {"none", of_type<&Value::is_none>},
    {"boolean", of_type<&Value::is_bool>},
    {"true", is_true},
    {"false", is_false},
    {"string", of_type<&Value::is_string>},
    {"number", of_type<&Value::is_number>},
    {"integer", of_type<&Value::is_int>},
    {"float", of_type<&Value::is_float>},
    {"mapping", mapping},
    {"iterable", iterable},
    {"sequence", sequence},
    {"callable", callable},
    {"escaped", escaped},
    {"lower", lower},
    {"upper", upper},
    {"even", even},
    {"odd", odd},
    {"divisibleby", divisibleby},
    {"eq", eq},
    {"equalto", eq},
    {"==", eq},
    {"ne", ne},
    {"!=", ne},
    {"sameas", sameas},
    {"lt", lt},
    {"lessthan", lt},
    {"<", lt},
    {"le", le},
    {"<=", le},
    {"gt", gt},
    {"greaterthan", gt},
    {">", gt},
    {"ge", ge},
    {">=", ge},
    {"in", in_container},
    {"filter", filter},
    {"test", test},
};

using TestTable = std::unordered_map<std::string_view, TestFn>;

const TestTable& test_table() {
  static const TestTable table = [] {
    TestTable t;
    for (const NamedTest& test : kTests) t.emplace(test.name, test.fn);
    return t;
  }();
  return table;
}

// `'name' is test`: the tests a template can name after `is`, so not the operator spellings.
bool test(Interpreter&, const Value& v, CallArgs&) {
  if (!v.is_string() || v.str().empty() || !std::isalpha(static_cast<unsigned char>(v.str()[0])))
    return false;
  return test_table().contains(v.str());
}

}  // namespace

bool apply_test(Interpreter& in, std::string_view name, const Value& v, CallArgs& a) {
  const TestTable& table = test_table();
  const auto it = table.find(name);
  if (it == table.end()) in.fail(Kind::Runtime, "no test named '" + std::string(name) + "'");
  return it->second(in, v, a);
}

}  // namespace hearth::chat
