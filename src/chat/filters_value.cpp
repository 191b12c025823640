// Jinja's filters on single values: defaults, lengths, conversions to int/float, rounding,
// attribute access and the JSON and repr renderings.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "chat/filters.h"
#include "chat/py_json.h"
#include "chat/py_string.h"

namespace hearth::chat {
namespace {

using Kind = TemplateError::Kind;

// default, d: the fallback for an undefined value (with boolean=true, for any falsy one).
Value default_value(Interpreter&, const Value& v, CallArgs& a) {
  const bool boolean = call_arg(a, 1, "boolean").truthy();
  if (v.is_undefined() || (boolean && !v.truthy())) {
    const Value& dflt = call_arg(a, 0, "default_value");
    return dflt.is_undefined() ? Value::string("") : dflt;
  }
  return v;
}

size_t py_len(Interpreter& in, const Value& v) {
  switch (v.type()) {
    case Value::Type::Undefined:
      return 0;
    case Value::Type::String:
      return utf8_length(v.str());
    case Value::Type::List:
      if (v.list_data().is_generator)
        in.fail(Kind::Type, "object of type 'generator' has no len()");
      return v.list_data().items.size();
    case Value::Type::Dict:
      if (v.dict_data().is_namespace) break;
      return v.dict_data().items.size();
    case Value::Type::Loop:
      return v.loop_data().items.size();
    default:
      break;
  }
  in.fail(Kind::Type, "object of type '" + v.type_name() + "' has no len()");
}

// length, count.
Value length(Interpreter& in, const Value& v, CallArgs&) {
  return Value::integer(static_cast<int64_t>(py_len(in, v)));
}

std::optional<int64_t> parse_int(std::string s, int base) {
  s = py::strip(s, std::nullopt, true, true);
  s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
  if (s.empty()) return std::nullopt;
  size_t i = 0;
  bool neg = false;
  if (s[0] == '+' || s[0] == '-') {
    neg = s[0] == '-';
    i = 1;
  }
  if (base == 16 && s.compare(i, 2, "0x") == 0) i += 2;
  int64_t v = 0;
  auto r = std::from_chars(s.data() + i, s.data() + s.size(), v, base);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size() || i == s.size()) return std::nullopt;
  return neg ? -v : v;
}

std::optional<double> parse_float(const std::string& str) {
  std::string s = py::strip(str, std::nullopt, true, true);
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  const double d = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return d;
}

Value to_int(Interpreter& in, const Value& v, CallArgs& a) {
  const Value& dflt0 = call_arg(a, 0, "default");
  const Value dflt = dflt0.is_undefined() ? Value::integer(0) : dflt0;
  const int64_t base = int_arg(in, call_arg(a, 1, "base"), 10, "base");
  if (v.is_bool() || v.is_int()) return Value::integer(v.as_int());
  if (v.is_float()) {
    const double d = v.as_float();
    if (!std::isfinite(d) || std::fabs(d) > 9.2e18) return dflt;
    return Value::integer(static_cast<int64_t>(d));
  }
  if (v.is_string()) {
    if (base < 2 || base > 36) return dflt;
    if (auto i = parse_int(v.str(), static_cast<int>(base))) return Value::integer(*i);
    if (auto d = parse_float(v.str()); d && std::isfinite(*d) && std::fabs(*d) < 9.2e18)
      return Value::integer(static_cast<int64_t>(*d));
  }
  return dflt;
}

Value to_float(Interpreter&, const Value& v, CallArgs& a) {
  const Value& dflt0 = call_arg(a, 0, "default");
  const Value dflt = dflt0.is_undefined() ? Value::number(0.0) : dflt0;
  if (v.is_number()) return Value::number(v.as_float());
  if (v.is_string())
    if (auto d = parse_float(v.str())) return Value::number(*d);
  return dflt;
}

Value absolute(Interpreter& in, const Value& v, CallArgs&) {
  if (v.is_float()) return Value::number(std::fabs(v.as_float()));
  if (v.is_number()) {
    if (v.as_int() == INT64_MIN) return Value::number(9.223372036854775808e18);
    return Value::integer(v.as_int() < 0 ? -v.as_int() : v.as_int());
  }
  in.fail(Kind::Type, "bad operand type for abs(): '" + v.type_name() + "'");
}

Value round_number(Interpreter& in, const Value& v, CallArgs& a) {
  if (!v.is_number()) in.fail(Kind::Type, "round: a number is required");
  const int64_t precision =
      std::clamp<int64_t>(int_arg(in, call_arg(a, 0, "precision"), 0, "precision"), -300, 300);
  const Value& method = call_arg(a, 1, "method");
  const std::string m = method.is_string() ? method.str() : "common";
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const double x = v.as_float() * scale;
  double r;
  if (m == "ceil") {
    r = std::ceil(x);
  } else if (m == "floor") {
    r = std::floor(x);
  } else if (m == "common") {
    r = std::nearbyint(x);  // Python's round(): halves go to even
  } else {
    in.fail(Kind::Runtime, "method must be common, ceil or floor");
  }
  return Value::number(r / scale);
}

// Python getattr only: a dict's keys are not attributes (its methods are), a namespace's and
// the loop's are.
Value attr(Interpreter& in, const Value& v, CallArgs& a) {
  const Value& n = call_arg(a, 0, "name");
  if (!n.is_string()) in.fail(Kind::Type, "attr: name must be a string");
  if (v.is_dict() && v.dict_data().is_namespace) {
    if (const Value* x = v.dict_data().find(n.str())) return *x;
  } else if (v.is_loop()) {
    return v.loop_data().get(n.str());
  } else if (has_method(v, n.str())) {
    return bound_method(v, n.str());
  }
  return Value::undefined(n.str());
}

Value pprint(Interpreter& in, const Value& v, CallArgs&) {
  return string_result(in, v.repr(), false);
}

// tojson's indent argument as json.dumps takes it: a string, or an int for that many spaces.
void set_json_indent(Interpreter& in, const Value& indent, JsonDumpOptions& o) {
  if (indent.is_string()) {
    o.indent = indent.str();
  } else if (indent.is_number() && !indent.is_float()) {  // Python: ' ' * indent
    const int64_t n = indent.as_int();
    if (n > static_cast<int64_t>(in.options().limits.max_output_bytes))
      in.fail(Kind::Limit, "tojson indent exceeds the output limit");
    o.indent = std::string(static_cast<size_t>(std::max<int64_t>(n, 0)), ' ');
  } else if (!indent.is_undefined() && !indent.is_none()) {
    in.fail(Kind::Type,
            "tojson indent must be an integer, a string or None, not " + indent.type_name());
  }
}

// transformers' tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False),
// which hands its arguments to Python's json.dumps (Jinja's own tojson, with indent first and
// HTML escaping, is replaced).
Value tojson(Interpreter& in, const Value& v, CallArgs& a) {
  static constexpr std::string_view kParams[] = {"ensure_ascii", "indent", "separators",
                                                 "sort_keys"};
  if (a.positional.size() > std::size(kParams))
    in.fail(Kind::Type, "tojson() takes from 1 to 5 positional arguments but " +
                            std::to_string(a.positional.size() + 1) + " were given");
  Value bound[std::size(kParams)];
  for (size_t i = 0; i < a.positional.size(); ++i) bound[i] = a.positional[i];
  for (const auto& [k, x] : a.keyword) {
    const auto* p = std::find(std::begin(kParams), std::end(kParams), k);
    if (p == std::end(kParams))
      in.fail(Kind::Type, "tojson() got an unexpected keyword argument '" + k + "'");
    const auto i = static_cast<size_t>(p - std::begin(kParams));
    if (i < a.positional.size())
      in.fail(Kind::Type, "tojson() got multiple values for argument '" + k + "'");
    bound[i] = x;
  }
  JsonDumpOptions o;
  o.ensure_ascii = bound[0].truthy();
  set_json_indent(in, bound[1], o);
  const Value& seps = bound[2];
  if (!seps.is_undefined() && !seps.is_none()) {
    if (!seps.is_list() || seps.list_data().is_generator || seps.list_data().items.size() != 2 ||
        !seps.list_data().items[0].is_string() || !seps.list_data().items[1].is_string())
      in.fail(Kind::Type, "tojson separators must be a pair of strings (item, key)");
    o.item_separator = seps.list_data().items[0].str();
    o.key_separator = seps.list_data().items[1].str();
  }
  o.sort_keys = bound[3].truthy();
  o.max_bytes = in.options().limits.max_output_bytes;
  std::string out;
  try {
    out = py_json_dumps(v, o);
  } catch (const JsonTooLarge& e) {
    in.fail(Kind::Limit, e.what());
  } catch (const hearth::Error& e) {
    in.fail(Kind::Type, e.what());
  }
  in.check_size(out.size());
  return Value::string(std::move(out), false);
}

constexpr NamedFilter kValueFilters[] = {
    {"default", default_value}, {"d", default_value},    {"length", length},
    {"count", length},          {"int", to_int},         {"float", to_float},
    {"abs", absolute},          {"round", round_number}, {"attr", attr},
    {"pprint", pprint},         {"tojson", tojson},
};

}  // namespace

std::span<const NamedFilter> value_filters() {
  return kValueFilters;
}

}  // namespace hearth::chat
