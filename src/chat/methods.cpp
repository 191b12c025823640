// Python methods on str, list and dict values, plus loop.cycle.
#include <algorithm>
#include <array>

#include "chat/builtins.h"
#include "chat/py_string.h"

namespace hearth::chat {
namespace {

using Kind = TemplateError::Kind;

constexpr std::array<std::string_view, 34> kStrMethods = {
    "strip",    "lstrip",  "rstrip",  "split",   "rsplit",    "splitlines",   "startswith",
    "endswith", "replace", "upper",   "lower",   "title",     "capitalize",   "format",
    "join",     "find",    "rfind",   "index",   "rindex",    "count",        "isdigit",
    "isalpha",  "isalnum", "isspace", "islower", "isupper",   "removeprefix", "removesuffix",
    "center",   "ljust",   "rjust",   "zfill",   "isnumeric", "swapcase"};
constexpr std::array<std::string_view, 2> kListMethods = {"index", "count"};
constexpr std::array<std::string_view, 9> kListMutators = {
    "append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse", "__setitem__"};
constexpr std::array<std::string_view, 5> kDictMethods = {"items", "keys", "values", "get", "copy"};
constexpr std::array<std::string_view, 6> kDictMutators = {"update",     "pop",   "popitem",
                                                           "setdefault", "clear", "__setitem__"};

template <size_t N>
bool contains(const std::array<std::string_view, N>& a, std::string_view n) {
  return std::find(a.begin(), a.end(), n) != a.end();
}

const Value& arg(CallArgs& a, size_t i, std::string_view kw) {
  static const Value kUndefined;
  if (i < a.positional.size()) return a.positional[i];
  if (const Value* v = a.kw(kw)) return *v;
  return kUndefined;
}

std::optional<std::string> opt_str(Interpreter& in, const Value& v, const char* what) {
  if (v.is_undefined() || v.is_none()) return std::nullopt;
  if (!v.is_string())
    in.fail(Kind::Type, std::string(what) + " must be str or None, not " + v.type_name());
  return v.str();
}

int64_t opt_int(Interpreter& in, const Value& v, int64_t dflt, const char* what) {
  if (v.is_undefined() || v.is_none()) return dflt;
  if (!v.is_number() || v.is_float())
    in.fail(Kind::Type, std::string(what) + " must be an integer, not " + v.type_name());
  return v.as_int();
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

Value string_method(Interpreter& in, const Value& self, std::string_view name, CallArgs& a) {
  const std::string& s = self.str();
  const bool trusted = all_trusted(self, a);
  auto out = [&](std::string r) {
    in.check_size(r.size());
    return Value::string(std::move(r), trusted);
  };
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    auto chars = opt_str(in, arg(a, 0, "chars"), "strip arg");
    return out(py::strip(s, chars, name != "rstrip", name != "lstrip"));
  }
  if (name == "split" || name == "rsplit") {
    auto sep = opt_str(in, arg(a, 0, "sep"), "sep");
    if (sep && sep->empty()) in.fail(Kind::Runtime, "empty separator");
    const int64_t maxsplit = opt_int(in, arg(a, 1, "maxsplit"), -1, "maxsplit");
    in.charge(s.size() / 8 + 1);
    return str_list(name == "split" ? py::split(s, sep, maxsplit) : py::rsplit(s, sep, maxsplit),
                    trusted);
  }
  if (name == "splitlines")
    return str_list(py::splitlines(s, arg(a, 0, "keepends").truthy()), trusted);
  if (name == "startswith" || name == "endswith")
    return Value::boolean(affix_match(in, s, arg(a, 0, "prefix"), name == "startswith"));
  if (name == "replace") {
    const Value& from = arg(a, 0, "old");
    const Value& to = arg(a, 1, "new");
    if (!from.is_string() || !to.is_string())
      in.fail(Kind::Type, "replace() arguments must be str");
    const int64_t count = opt_int(in, arg(a, 2, "count"), -1, "count");
    if (!from.str().empty() && to.str().size() > from.str().size()) {
      const size_t n = py::count(s, from.str());
      in.check_size(s.size() + n * (to.str().size() - from.str().size()));
    } else if (from.str().empty()) {
      in.check_size(s.size() + (s.size() + 1) * to.str().size());
    }
    return out(py::replace(s, from.str(), to.str(), count));
  }
  if (name == "upper") return out(py::upper(s));
  if (name == "lower") return out(py::lower(s));
  if (name == "title") return out(py::title(s));
  if (name == "capitalize") return out(py::capitalize(s));
  if (name == "swapcase") {
    std::string r = s;
    for (char& c : r) {
      if (c >= 'a' && c <= 'z') {
        c = static_cast<char>(c - 32);
      } else if (c >= 'A' && c <= 'Z') {
        c = static_cast<char>(c + 32);
      }
    }
    return out(std::move(r));
  }
  if (name == "format") return Value::string(str_format(in, s, a), false);
  if (name == "join") {
    const std::vector<Value> items = iterable_items(in, arg(a, 0, "iterable"));
    std::string r;
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].is_string())
        in.fail(Kind::Type, "sequence item " + std::to_string(i) + ": expected str instance, " +
                                items[i].type_name() + " found");
      if (i) r += s;
      r += items[i].str();
      in.check_size(r.size());
    }
    return Value::string(std::move(r), false);
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex") {
    const Value& sub = arg(a, 0, "sub");
    if (!sub.is_string()) in.fail(Kind::Type, "must be str, not " + sub.type_name());
    const size_t f = name[0] == 'r' ? s.rfind(sub.str()) : s.find(sub.str());
    if (f == std::string::npos) {
      if (name.find("index") != std::string_view::npos)
        in.fail(Kind::Runtime, "substring not found");
      return Value::integer(-1);
    }
    return Value::integer(static_cast<int64_t>(utf8_length(std::string_view(s).substr(0, f))));
  }
  if (name == "count") {
    const Value& sub = arg(a, 0, "sub");
    if (!sub.is_string()) in.fail(Kind::Type, "must be str, not " + sub.type_name());
    return Value::integer(static_cast<int64_t>(py::count(s, sub.str())));
  }
  if (name == "isdigit" || name == "isnumeric")
    return Value::boolean(!s.empty() && std::all_of(s.begin(), s.end(), ::isdigit));
  if (name == "isalpha")
    return Value::boolean(!s.empty() && std::all_of(s.begin(), s.end(), ::isalpha));
  if (name == "isalnum")
    return Value::boolean(!s.empty() && std::all_of(s.begin(), s.end(), ::isalnum));
  if (name == "isspace") {
    if (s.empty()) return Value::boolean(false);
    for (size_t i = 0; i < s.size();)
      if (!py::is_space(py::decode(s, i))) return Value::boolean(false);
    return Value::boolean(true);
  }
  if (name == "islower") return Value::boolean(py::is_lower(s));
  if (name == "isupper") return Value::boolean(py::is_upper(s));
  if (name == "removeprefix" || name == "removesuffix") {
    const Value& p = arg(a, 0, name == "removeprefix" ? "prefix" : "suffix");
    if (!p.is_string()) in.fail(Kind::Type, std::string(name) + " arg must be str");
    const bool pre = name == "removeprefix";
    if (affix_match(in, s, p, pre))
      return out(pre ? s.substr(p.str().size()) : s.substr(0, s.size() - p.str().size()));
    return self;
  }
  if (name == "center" || name == "ljust" || name == "rjust" || name == "zfill") {
    const int64_t width = opt_int(in, arg(a, 0, "width"), 0, "width");
    const size_t len = utf8_length(s);
    if (width <= static_cast<int64_t>(len)) return self;
    const auto pad = static_cast<size_t>(width) - len;
    in.check_size(s.size() + pad);
    if (name == "zfill") {
      const bool sign = !s.empty() && (s[0] == '-' || s[0] == '+');
      return out((sign ? s.substr(0, 1) : "") + std::string(pad, '0') + s.substr(sign ? 1 : 0));
    }
    std::string fill = " ";
    if (const Value& f = arg(a, 1, "fillchar"); f.is_string() && utf8_length(f.str()) == 1)
      fill = f.str();
    auto rep = [&](size_t n) {
      std::string r;
      for (size_t i = 0; i < n; ++i) r += fill;
      return r;
    };
    if (name == "ljust") return out(s + rep(pad));
    if (name == "rjust") return out(rep(pad) + s);
    const size_t left = pad / 2 + (pad & static_cast<size_t>(width) & 1);
    return out(rep(left) + s + rep(pad - left));
  }
  in.fail(Kind::Runtime, "'str' object has no attribute '" + std::string(name) + "'");
}

}  // namespace

bool has_method(const Value& obj, std::string_view name) {
  switch (obj.type()) {
    case Value::Type::String:
      return contains(kStrMethods, name);
    case Value::Type::List:
      return contains(kListMethods, name) || contains(kListMutators, name);
    case Value::Type::Dict:
      return !obj.dict_data().is_namespace &&
             (contains(kDictMethods, name) || contains(kDictMutators, name));
    case Value::Type::Loop:
      return name == "cycle";
    default:
      return false;
  }
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
  if ((obj.is_list() && contains(kListMutators, name)) ||
      (obj.is_dict() && contains(kDictMutators, name)))
    in.fail(Kind::Security, "access to attribute '" + std::string(name) + "' of '" +
                                obj.type_name() + "' object is unsafe.");
  switch (obj.type()) {
    case Value::Type::String:
      return string_method(in, obj, name, a);
    case Value::Type::List: {
      const auto& items = obj.list_data().items;
      const Value& x = arg(a, 0, "value");
      if (name == "count") {
        int64_t n = 0;
        for (const auto& v : items) n += py_equal(v, x);
        return Value::integer(n);
      }
      for (size_t i = 0; i < items.size(); ++i)
        if (py_equal(items[i], x)) return Value::integer(static_cast<int64_t>(i));
      in.fail(Kind::Runtime, x.repr() + " is not in list");
    }
    case Value::Type::Dict: {
      const DictData& d = obj.dict_data();
      if (name == "get") {
        const Value& key = arg(a, 0, "key");
        if (!is_hashable(key)) in.fail(Kind::Type, "unhashable type: '" + key.type_name() + "'");
        if (const Value* v = d.find(key)) return *v;
        const Value& dflt = arg(a, 1, "default");
        return dflt.is_undefined() ? Value::none() : dflt;
      }
      if (name == "copy") {
        Value c = Value::dict();
        c.dict_data().items = d.items;
        c.dict_data().depth = d.depth;
        return c;
      }
      std::vector<Value> out;
      out.reserve(d.items.size());
      in.charge(d.items.size());
      for (const auto& [k, v] : d.items) {
        if (name == "keys") {
          out.push_back(k);
        } else if (name == "values") {
          out.push_back(v);
        } else {
          out.push_back(Value::tuple({k, v}));
        }
      }
      return Value::list(std::move(out));
    }
    case Value::Type::Loop: {
      if (a.positional.empty()) in.fail(Kind::Type, "no items for cycling given");
      return a.positional[obj.loop_data().index0 % a.positional.size()];
    }
    default:
      in.fail(Kind::Runtime,
              "'" + obj.type_name() + "' object has no attribute '" + std::string(name) + "'");
  }
}

}  // namespace hearth::chat
