// Python methods on str, list and dict values, plus loop.cycle: one function per method, found
// by name in the table of the value's type.
#include <algorithm>
#include <cctype>
#include <optional>
#include <span>

#include "chat/builtins.h"
#include "chat/py_string.h"

namespace hearth::chat {
namespace {

using Kind = TemplateError::Kind;

// A method gets its object (`self`) and the call's arguments.
using MethodFn = Value (*)(Interpreter& in, const Value& self, CallArgs& a);
struct NamedMethod {
  std::string_view name;
  MethodFn fn;
};

// The sandbox's mutating methods: they exist (so a template can name them) but refuse to run.
constexpr std::string_view kListMutators[] = {"append", "extend", "insert",  "pop",        "remove",
                                              "clear",  "sort",   "reverse", "__setitem__"};
constexpr std::string_view kDictMutators[] = {"update",     "pop",   "popitem",
                                              "setdefault", "clear", "__setitem__"};

std::optional<std::string> opt_str(Interpreter& in, const Value& v, const char* what) {
  if (v.is_undefined() || v.is_none()) return std::nullopt;
  if (!v.is_string())
    in.fail(Kind::Type, std::string(what) + " must be str or None, not " + v.type_name());
  return v.str();
}

bool all_trusted(const Value& self, const CallArgs& a) {
  if (self.is_string() && !self.str_ref().fully_trusted()) return false;
  for (const auto& v : a.positional)
    if (v.is_string() && !v.str_ref().fully_trusted()) return false;
  return true;
}

Value str_list(std::vector<std::string> parts, bool trusted) {
  std::vector<Value> items;
  items.reserve(parts.size());
  for (auto& p : parts) items.push_back(Value::string(std::move(p), trusted));
  return Value::list(std::move(items));
}

// startswith/endswith accept a str or a tuple of str.
bool affix_match(Interpreter& in, const std::string& s, const Value& what, bool start) {
  auto one = [&](const Value& v) {
    if (!v.is_string())
      in.fail(Kind::Type, std::string(start ? "startswith" : "endswith") +
                              " first arg must be str or a tuple of str, not " + v.type_name());
    const std::string& p = v.str();
    if (p.size() > s.size()) return false;
    return start ? s.compare(0, p.size(), p) == 0
                 : s.compare(s.size() - p.size(), p.size(), p) == 0;
  };
  if (what.is_list()) {
    for (const auto& v : what.list_data().items)
      if (one(v)) return true;
    return false;
  }
  return one(what);
}

// str.format with {} / {0} / {name} fields (no format specs beyond plain conversion).
std::string str_format(Interpreter& in, const std::string& f, CallArgs& a) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    const char c = f[i];
    if (c == '{') {
      if (i + 1 < f.size() && f[i + 1] == '{') {
        out += '{';
        ++i;
        continue;
      }
      const size_t close = f.find('}', i);
      if (close == std::string::npos)
        in.fail(Kind::Runtime, "Single '{' encountered in format string");
      std::string field = f.substr(i + 1, close - i - 1);
      const size_t colon = field.find_first_of(":!");
      if (colon != std::string::npos) field.resize(colon);
      const Value* v = nullptr;
      if (field.empty()) {
        if (auto_index >= a.positional.size())
          in.fail(Kind::Runtime,
                  "Replacement index " + std::to_string(auto_index) + " out of range");
        v = &a.positional[auto_index++];
      } else if (std::all_of(field.begin(), field.end(), ::isdigit)) {
        const size_t k = std::stoul(field);
        if (k >= a.positional.size())
          in.fail(Kind::Runtime, "Replacement index " + field + " out of range");
        v = &a.positional[k];
      } else {
        v = a.kw(field);
        if (!v) in.fail(Kind::Runtime, "KeyError: '" + field + "'");
      }
      out += v->to_str();
      in.check_size(out.size());
      i = close;
    } else if (c == '}') {
      if (i + 1 < f.size() && f[i + 1] == '}') ++i;
      out += '}';
    } else {
      out += c;
    }
  }
  return out;
}

// A str method's string result: template text only when self and every str argument were.
Value text_result(Interpreter& in, const Value& self, const CallArgs& a, std::string r) {
  in.check_size(r.size());
  return Value::string(std::move(r), all_trusted(self, a));
}

// --- str: case, padding, trimming ------------------------------------------------------------
// upper, lower, title, capitalize.
template <std::string (*Map)(std::string_view)>
Value recase(Interpreter& in, const Value& self, CallArgs& a) {
  return text_result(in, self, a, Map(self.str()));
}

Value swapcase(Interpreter& in, const Value& self, CallArgs& a) {
  std::string r = self.str();
  for (char& c : r) {
    if (c >= 'a' && c <= 'z') {
      c = static_cast<char>(c - 32);
    } else if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c + 32);
    }
  }
  return text_result(in, self, a, std::move(r));
}

// strip, lstrip, rstrip.
template <bool Left, bool Right>
Value strip(Interpreter& in, const Value& self, CallArgs& a) {
  auto chars = opt_str(in, call_arg(a, 0, "chars"), "strip arg");
  return text_result(in, self, a, py::strip(self.str(), chars, Left, Right));
}

// removeprefix, removesuffix: self itself when the affix is not there.
template <bool Prefix>
Value remove_affix(Interpreter& in, const Value& self, CallArgs& a) {
  const std::string& s = self.str();
  const Value& p = call_arg(a, 0, Prefix ? "prefix" : "suffix");
  if (!p.is_string())
    in.fail(Kind::Type, std::string(Prefix ? "removeprefix" : "removesuffix") + " arg must be str");
  if (!affix_match(in, s, p, Prefix)) return self;
  return text_result(in, self, a,
                     Prefix ? s.substr(p.str().size()) : s.substr(0, s.size() - p.str().size()));
}

enum class Justify { Center, Left, Right, Zeros };

// center, ljust, rjust (with fillchar, one code point) and zfill: self when already as wide.
template <Justify How>
Value justify(Interpreter& in, const Value& self, CallArgs& a) {
  const std::string& s = self.str();
  const int64_t width = int_arg(in, call_arg(a, 0, "width"), 0, "width");
  const size_t len = utf8_length(s);
  if (width <= static_cast<int64_t>(len)) return self;
  const auto pad = static_cast<size_t>(width) - len;
  in.check_size(s.size() + pad);
  if (How == Justify::Zeros) {
    const bool sign = !s.empty() && (s[0] == '-' || s[0] == '+');
    return text_result(
        in, self, a, (sign ? s.substr(0, 1) : "") + std::string(pad, '0') + s.substr(sign ? 1 : 0));
  }
  std::string fill = " ";
  if (const Value& f = call_arg(a, 1, "fillchar"); f.is_string() && utf8_length(f.str()) == 1)
    fill = f.str();
  auto rep = [&](size_t n) {
    std::string r;
    for (size_t i = 0; i < n; ++i) r += fill;
    return r;
  };
  if (How == Justify::Left) return text_result(in, self, a, s + rep(pad));
  if (How == Justify::Right) return text_result(in, self, a, rep(pad) + s);
  const size_t left = pad / 2 + (pad & static_cast<size_t>(width) & 1);
  return text_result(in, self, a, rep(left) + s + rep(pad - left));
}

// --- str: splitting, joining, replacing, formatting ------------------------------------------
// split, rsplit.
template <bool FromRight>
Value split(Interpreter& in, const Value& self, CallArgs& a) {
  const std::string& s = self.str();
  auto sep = opt_str(in, call_arg(a, 0, "sep"), "sep");
  if (sep && sep->empty()) in.fail(Kind::Runtime, "empty separator");
  const int64_t maxsplit = int_arg(in, call_arg(a, 1, "maxsplit"), -1, "maxsplit");
  in.charge(s.size() / 8 + 1);
  return str_list(FromRight ? py::rsplit(s, sep, maxsplit) : py::split(s, sep, maxsplit),
                  all_trusted(self, a));
}

Value splitlines(Interpreter&, const Value& self, CallArgs& a) {
  return str_list(py::splitlines(self.str(), call_arg(a, 0, "keepends").truthy()),
                  all_trusted(self, a));
}

Value join(Interpreter& in, const Value& self, CallArgs& a) {
  const std::vector<Value> items = iterable_items(in, call_arg(a, 0, "iterable"));
  std::string r;
  for (size_t i = 0; i < items.size(); ++i) {
    if (!items[i].is_string())
      in.fail(Kind::Type, "sequence item " + std::to_string(i) + ": expected str instance, " +
                              items[i].type_name() + " found");
    if (i) r += self.str();
    r += items[i].str();
    in.check_size(r.size());
  }
  return Value::string(std::move(r), false);
}

Value replace(Interpreter& in, const Value& self, CallArgs& a) {
  const std::string& s = self.str();
  const Value& from = call_arg(a, 0, "old");
  const Value& to = call_arg(a, 1, "new");
  if (!from.is_string() || !to.is_string()) in.fail(Kind::Type, "replace() arguments must be str");
  const int64_t count = int_arg(in, call_arg(a, 2, "count"), -1, "count");
  if (!from.str().empty() && to.str().size() > from.str().size()) {
    const size_t n = py::count(s, from.str());
    in.check_size(s.size() + n * (to.str().size() - from.str().size()));
  } else if (from.str().empty()) {
    in.check_size(s.size() + (s.size() + 1) * to.str().size());
  }
  return text_result(in, self, a, py::replace(s, from.str(), to.str(), count));
}

Value format(Interpreter& in, const Value& self, CallArgs& a) {
  return Value::string(str_format(in, self.str(), a), false);
}

// --- str: searching and classifying ----------------------------------------------------------
// startswith, endswith.
template <bool Start>
Value has_affix(Interpreter& in, const Value& self, CallArgs& a) {
  return Value::boolean(affix_match(in, self.str(), call_arg(a, 0, "prefix"), Start));
}

// find, rfind (-1 when absent) and index, rindex (an error then); positions in code points.
template <bool FromRight, bool MustFind>
Value find(Interpreter& in, const Value& self, CallArgs& a) {
  const std::string& s = self.str();
  const Value& sub = call_arg(a, 0, "sub");
  if (!sub.is_string()) in.fail(Kind::Type, "must be str, not " + sub.type_name());
  const size_t f = FromRight ? s.rfind(sub.str()) : s.find(sub.str());
  if (f == std::string::npos) {
    if (MustFind) in.fail(Kind::Runtime, "substring not found");
    return Value::integer(-1);
  }
  return Value::integer(static_cast<int64_t>(utf8_length(std::string_view(s).substr(0, f))));
}

Value count(Interpreter& in, const Value& self, CallArgs& a) {
  const Value& sub = call_arg(a, 0, "sub");
  if (!sub.is_string()) in.fail(Kind::Type, "must be str, not " + sub.type_name());
  return Value::integer(static_cast<int64_t>(py::count(self.str(), sub.str())));
}

// isdigit, isnumeric, isalpha, isalnum: a non-empty string of such ASCII bytes.
template <int (*Is)(int)>
Value all_bytes(Interpreter&, const Value& self, CallArgs&) {
  const std::string& s = self.str();
  return Value::boolean(!s.empty() && std::all_of(s.begin(), s.end(), Is));
}

Value isspace(Interpreter&, const Value& self, CallArgs&) {
  const std::string& s = self.str();
  if (s.empty()) return Value::boolean(false);
  for (size_t i = 0; i < s.size();)
    if (!py::is_space(py::decode(s, i))) return Value::boolean(false);
  return Value::boolean(true);
}

Value islower(Interpreter&, const Value& self, CallArgs&) {
  return Value::boolean(py::is_lower(self.str()));
}
Value isupper(Interpreter&, const Value& self, CallArgs&) {
  return Value::boolean(py::is_upper(self.str()));
}

constexpr NamedMethod kStrMethods[] = {
    {"strip", strip<true, true>},
    {"lstrip", strip<true, false>},
    {"rstrip", strip<false, true>},
    {"split", split<false>},
    {"rsplit", split<true>},
    {"splitlines", splitlines},
    {"startswith", has_affix<true>},
    {"endswith", has_affix<false>},
    {"replace", replace},
    {"upper", recase<py::upper>},
    {"lower", recase<py::lower>},
    {"title", recase<py::title>},
    {"capitalize", recase<py::capitalize>},
    {"swapcase", swapcase},
    {"format", format},
    {"join", join},
    {"find", find<false, false>},
    {"rfind", find<true, false>},
    {"index", find<false, true>},
    {"rindex", find<true, true>},
    {"count", count},
    {"isdigit", all_bytes<::isdigit>},
    {"isnumeric", all_bytes<::isdigit>},
    {"isalpha", all_bytes<::isalpha>},
    {"isalnum", all_bytes<::isalnum>},
    {"isspace", isspace},
    {"islower", islower},
    {"isupper", isupper},
    {"removeprefix", remove_affix<true>},
    {"removesuffix", remove_affix<false>},
    {"center", justify<Justify::Center>},
    {"ljust", justify<Justify::Left>},
    {"rjust", justify<Justify::Right>},
    {"zfill", justify<Justify::Zeros>},
};

// --- list, dict, loop ------------------------------------------------------------------------
Value list_count(Interpreter&, const Value& self, CallArgs& a) {
  const Value& x = call_arg(a, 0, "value");
  int64_t n = 0;
  for (const auto& v : self.list_data().items) n += py_equal(v, x);
  return Value::integer(n);
}

Value list_index(Interpreter& in, const Value& self, CallArgs& a) {
  const auto& items = self.list_data().items;
  const Value& x = call_arg(a, 0, "value");
  for (size_t i = 0; i < items.size(); ++i)
    if (py_equal(items[i], x)) return Value::integer(static_cast<int64_t>(i));
  in.fail(Kind::Runtime, x.repr() + " is not in list");
}

constexpr NamedMethod kListMethods[] = {{"count", list_count}, {"index", list_index}};

Value dict_get(Interpreter& in, const Value& self, CallArgs& a) {
  const Value& key = call_arg(a, 0, "key");
  if (!is_hashable(key)) in.fail(Kind::Type, "unhashable type: '" + key.type_name() + "'");
  if (const Value* v = self.dict_data().find(key)) return *v;
  const Value& dflt = call_arg(a, 1, "default");
  return dflt.is_undefined() ? Value::none() : dflt;
}

Value dict_copy(Interpreter&, const Value& self, CallArgs&) {
  const DictData& d = self.dict_data();
  Value c = Value::dict();
  c.dict_data().items = d.items;
  c.dict_data().depth = d.depth;
  return c;
}

enum class DictPart { Keys, Values, Items };

// keys, values, items: a list of the keys, the values or (key, value) tuples.
template <DictPart Part>
Value dict_view(Interpreter& in, const Value& self, CallArgs&) {
  const DictData& d = self.dict_data();
  std::vector<Value> out;
  out.reserve(d.items.size());
  in.charge(d.items.size());
  for (const auto& [k, v] : d.items) {
    if (Part == DictPart::Keys) {
      out.push_back(k);
    } else if (Part == DictPart::Values) {
      out.push_back(v);
    } else {
      out.push_back(Value::tuple({k, v}));
    }
  }
  return Value::list(std::move(out));
}

constexpr NamedMethod kDictMethods[] = {{"items", dict_view<DictPart::Items>},
                                        {"keys", dict_view<DictPart::Keys>},
                                        {"values", dict_view<DictPart::Values>},
                                        {"get", dict_get},
                                        {"copy", dict_copy}};

// loop.cycle(a, b, ...): the argument at the loop's index, round robin.
Value cycle(Interpreter& in, const Value& self, CallArgs& a) {
  if (a.positional.empty()) in.fail(Kind::Type, "no items for cycling given");
  return a.positional[self.loop_data().index0 % a.positional.size()];
}

constexpr NamedMethod kLoopMethods[] = {{"cycle", cycle}};

std::span<const NamedMethod> methods_of(Value::Type type) {
  switch (type) {
    case Value::Type::String:
      return kStrMethods;
    case Value::Type::List:
      return kListMethods;
    case Value::Type::Dict:
      return kDictMethods;
    case Value::Type::Loop:
      return kLoopMethods;
    default:
      return {};
  }
}

MethodFn find_method(const Value& obj, std::string_view name) {
  for (const NamedMethod& m : methods_of(obj.type()))
    if (m.name == name) return m.fn;
  return nullptr;
}

bool is_mutator(const Value& obj, std::string_view name) {
  if (obj.is_list())
    return std::find(std::begin(kListMutators), std::end(kListMutators), name) !=
           std::end(kListMutators);
  if (obj.is_dict())
    return std::find(std::begin(kDictMutators), std::end(kDictMutators), name) !=
           std::end(kDictMutators);
  return false;
}

}  // namespace

// A namespace's names are its attributes; it has no methods.
bool has_method(const Value& obj, std::string_view name) {
  if (obj.is_dict() && obj.dict_data().is_namespace) return false;
  return find_method(obj, name) != nullptr || is_mutator(obj, name);
}

Value bound_method(const Value& obj, std::string_view name) {
  auto c = std::make_shared<Callable>();
  c->name = std::string(name);
  c->bound_self = obj;
  Value self = obj;
  std::string n(name);
  c->fn = [self, n](Interpreter& in, CallArgs& a) { return call_method(in, self, n, a); };
  return Value::callable(std::move(c));
}

Value call_method(Interpreter& in, const Value& obj, std::string_view name, CallArgs& a) {
  if (is_mutator(obj, name))
    in.fail(Kind::Security, "access to attribute '" + std::string(name) + "' of '" +
                                obj.type_name() + "' object is unsafe.");
  if (const MethodFn fn = find_method(obj, name)) return fn(in, obj, a);
  in.fail(Kind::Runtime,
          "'" + obj.type_name() + "' object has no attribute '" + std::string(name) + "'");
}

}  // namespace hearth::chat
