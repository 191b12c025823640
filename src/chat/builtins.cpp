// What the filters, tests and methods share (arguments, attribute paths, Python's sort order),
// the globals transformers adds (range, namespace, dict, raise_exception, strftime_now) and
// Python's `str % args`.
#include "chat/builtins.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <unordered_map>

#include "chat/py_string.h"

namespace hearth::chat {

const Value& call_arg(const CallArgs& a, size_t i, std::string_view kw) {
  static const Value kUndefined;
  if (i < a.positional.size()) return a.positional[i];
  if (const Value* v = a.kw(kw)) return *v;
  return kUndefined;
}

int64_t int_arg(Interpreter& in, const Value& v, int64_t dflt, const char* what) {
  if (v.is_undefined() || v.is_none()) return dflt;
  if (!v.is_number() || v.is_float())
    in.fail(TemplateError::Kind::Type,
            std::string(what) + " must be an integer, not " + v.type_name());
  return v.as_int();
}

namespace {

using Kind = TemplateError::Kind;

// Jinja's environment.getitem without the method fallback: dict keys, list/str indices (negative
// ones too), named-tuple fields and loop attributes; anything else is undefined.
Value item_of(const Value& cur, const Value& key) {
  const std::string name = key.to_str();
  if (cur.is_dict()) {
    const Value* v = cur.dict_data().find(key);
    return v ? *v : Value::undefined(name);
  }
  if (cur.is_list() && !cur.list_data().is_generator) {
    const ListData& l = cur.list_data();
    if (key.is_int()) {
      int64_t i = key.as_int();
      if (i < 0) i += static_cast<int64_t>(l.items.size());
      if (i >= 0 && static_cast<size_t>(i) < l.items.size()) return l.items[static_cast<size_t>(i)];
    } else if (key.is_string()) {
      if (const Value* f = l.field(key.str())) return *f;
    }
    return Value::undefined(name);
  }
  if (cur.is_string() && key.is_int()) {
    const auto off = utf8_offsets(cur.str());
    int64_t i = key.as_int();
    if (i < 0) i += static_cast<int64_t>(off.size() - 1);
    if (i >= 0 && static_cast<size_t>(i) + 1 < off.size()) {
      const auto u = static_cast<size_t>(i);
      return Value::string(cur.str().substr(off[u], off[u + 1] - off[u]),
                           cur.str_ref().fully_trusted());
    }
    return Value::undefined(name);
  }
  if (cur.is_loop() && key.is_string()) return cur.loop_data().get(key.str());
  return Value::undefined(name);
}

}  // namespace

// Jinja's make_attrgetter: a str attribute is a dotted path whose all-digit parts are ints, an
// int attribute one index; each part is looked up as an item (so `map(attribute='0')` reads d[0]
// or a list's first item) and, with a default, an undefined step becomes the default.
Value attr_lookup(Interpreter& in, const Value& item, const Value& attribute, const Value* dflt) {
  std::vector<Value> parts;
  if (attribute.is_string()) {
    for (const std::string& part : py::split(attribute.str(), std::string("."), -1)) {
      const bool digits =
          !part.empty() && part.size() < 19 && std::all_of(part.begin(), part.end(), ::isdigit);
      parts.push_back(digits ? Value::integer(std::stoll(part)) : Value::string(part));
    }
  } else if (attribute.is_int()) {
    parts.push_back(attribute);
  } else if (!attribute.is_undefined() && !attribute.is_none()) {
    in.fail(Kind::Type, "attribute must be a str or an int, not " + attribute.type_name());
  }
  Value cur = item;
  for (const Value& key : parts) {
    cur = item_of(cur, key);
    if (dflt && cur.is_undefined()) cur = *dflt;
  }
  return cur;
}

Value attr_path(Interpreter& in, const Value& item, const std::string& path) {
  return attr_lookup(in, item, Value::string(path), nullptr);
}

// Sort key comparison (Python ordering, strings case-folded unless case_sensitive).
bool sort_less(Interpreter& in, const Value& a, const Value& b, bool case_sensitive) {
  if (a.is_string() && b.is_string()) {
    if (case_sensitive) return a.str() < b.str();
    return py::lower(a.str()) < py::lower(b.str());
  }
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_float() < b.as_float();
    return a.as_int() < b.as_int();
  }
  if (a.is_list() && b.is_list()) {
    const auto& x = a.list_data().items;
    const auto& y = b.list_data().items;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (sort_less(in, x[i], y[i], case_sensitive)) return true;
      if (sort_less(in, y[i], x[i], case_sensitive)) return false;
    }
    return x.size() < y.size();
  }
  if (a.is_undefined() || b.is_undefined())  // Jinja's Undefined refuses to be compared
    in.fail(Kind::Undefined, "an undefined value cannot be ordered");
  in.fail(Kind::Type, "'<' not supported between instances of '" + a.type_name() + "' and '" +
                          b.type_name() + "'");
}

Value fold_case(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value::string(py::lower(v.str()));
  return v;
}

namespace {

std::string strftime_now(Interpreter& in, const std::string& fmt) {
  std::tm tm{};
  if (in.options().clock) {
    tm = in.options().clock();
  } else {
    const std::time_t t = std::time(nullptr);
    localtime_r(&t, &tm);
  }
  if (fmt.size() > 4096) in.fail(Kind::Runtime, "strftime format too long");
  std::string out(fmt.size() * 8 + 64, '\0');
  const size_t n = std::strftime(out.data(), out.size(), fmt.c_str(), &tm);
  out.resize(n);
  return out;
}

Value make_global(const char* name, std::function<Value(Interpreter&, CallArgs&)> fn) {
  auto c = std::make_shared<Callable>();
  c->name = name;
  c->fn = std::move(fn);
  return Value::callable(std::move(c));
}

const std::unordered_map<std::string_view, Value>& globals() {
  static const std::unordered_map<std::string_view, Value> g = [] {
    std::unordered_map<std::string_view, Value> m;
    m["raise_exception"] =
        make_global("raise_exception", [](Interpreter& in, CallArgs& a) -> Value {
          const Value& msg = call_arg(a, 0, "message");
          in.fail(Kind::Raised, msg.to_str());
        });
    m["strftime_now"] = make_global("strftime_now", [](Interpreter& in, CallArgs& a) {
      const Value& f = call_arg(a, 0, "format");
      if (!f.is_string()) in.fail(Kind::Type, "strftime_now() argument must be str");
      return Value::string(strftime_now(in, f.str()));
    });
    m["range"] = make_global("range", [](Interpreter& in, CallArgs& a) {
      int64_t start = 0, stop = 0, step = 1;
      if (a.positional.size() == 1) {
        stop = int_arg(in, a.positional[0], 0, "range() argument");
      } else if (a.positional.size() >= 2) {
        start = int_arg(in, a.positional[0], 0, "range() argument");
        stop = int_arg(in, a.positional[1], 0, "range() argument");
        if (a.positional.size() >= 3) step = int_arg(in, a.positional[2], 1, "range() argument");
      } else {
        in.fail(Kind::Type, "range expected at least 1 argument, got 0");
      }
      if (step == 0) in.fail(Kind::Runtime, "range() arg 3 must not be zero");
      const double n = std::ceil((static_cast<double>(stop) - static_cast<double>(start)) /
                                 static_cast<double>(step));
      if (n > static_cast<double>(in.options().limits.max_loop_iterations))
        in.fail(Kind::Limit, "range() too large (Limits::max_loop_iterations)");
      std::vector<Value> items;
      if (n > 0) {
        items.reserve(static_cast<size_t>(n));
        in.charge(static_cast<uint64_t>(n));
        for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step)
          items.push_back(Value::integer(i));
      }
      return Value::list(std::move(items));
    });
    auto dict_like = [](bool ns) {
      return [ns](Interpreter& in, CallArgs& a) {
        Value d = ns ? Value::name_space() : Value::dict();
        for (const auto& p : a.positional) {
          if (p.is_dict()) {
            for (const auto& [k, v] : p.dict_data().items) d.dict_data().set(k, v);
          } else {
            in.fail(Kind::Type, "namespace()/dict() takes mappings and keyword arguments");
          }
        }
        for (const auto& [k, v] : a.keyword) d.dict_data().set(k, v);
        return d;
      };
    };
    m["namespace"] = make_global("namespace", dict_like(true));
    m["dict"] = make_global("dict", dict_like(false));
    return m;
  }();
  return g;
}

}  // namespace

const Value* find_global(std::string_view name) {
  const auto& g = globals();
  auto it = g.find(name);
  return it == g.end() ? nullptr : &it->second;
}

Value python_percent_format(Interpreter& in, const Value& fmt, const Value& args) {
  const std::string& f = fmt.str();
  std::vector<Value> list;
  if (args.is_list() && args.list_data().is_tuple) {
    list = args.list_data().items;
  } else {
    list.push_back(args);
  }
  size_t next = 0;
  std::string out;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] != '%') {
      out += f[i];
      continue;
    }
    if (i + 1 >= f.size()) in.fail(Kind::Runtime, "incomplete format");
    const char c = f[++i];
    if (c == '%') {
      out += '%';
      continue;
    }
    if (next >= list.size()) in.fail(Kind::Type, "not enough arguments for format string");
    const Value& x = list[next++];
    switch (c) {
      case 's':
        out += x.to_str();
        break;
      case 'r':
        out += x.repr();
        break;
      case 'd':
      case 'i':
        if (!x.is_number()) in.fail(Kind::Type, "%d format: a real number is required");
        out += std::to_string(x.is_float() ? static_cast<int64_t>(x.as_float()) : x.as_int());
        break;
      case 'f': {
        if (!x.is_number()) in.fail(Kind::Type, "must be real number");
        char b[64];
        std::snprintf(b, sizeof b, "%f", x.as_float());
        out += b;
        break;
      }
      case 'x':
        if (!x.is_number() || x.is_float())
          in.fail(Kind::Type, "%x format: an integer is required");
        {
          char b[32];
          std::snprintf(b, sizeof b, "%llx", static_cast<unsigned long long>(x.as_int()));
          out += b;
        }
        break;
      default:
        in.fail(Kind::Runtime, std::string("unsupported format character '") + c + "'");
    }
    in.check_size(out.size());
  }
  if (next < list.size())
    in.fail(Kind::Type, "not all arguments converted during string formatting");
  return Value::string(std::move(out), false);
}

}  // namespace hearth::chat
