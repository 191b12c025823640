// Jinja2 3.1's filters, tests and the globals transformers adds, with Python's semantics.
#include "chat/builtins.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <unordered_map>

#include "chat/py_json.h"
#include "chat/py_string.h"
#include "chat/text_wrap.h"

namespace hearth::chat {

const Value& call_arg(const CallArgs& a, size_t i, std::string_view kw) {
  static const Value kUndefined;
  if (i < a.positional.size()) return a.positional[i];
  if (const Value* v = a.kw(kw)) return *v;
  return kUndefined;
}

namespace {

using Kind = TemplateError::Kind;

const Value& arg(const CallArgs& a, size_t i, std::string_view kw) {
  return call_arg(a, i, kw);
}

int64_t int_arg(Interpreter& in, const Value& v, int64_t dflt, const char* what) {
  if (v.is_undefined() || v.is_none()) return dflt;
  if (!v.is_number() || v.is_float())
    in.fail(Kind::Type, std::string(what) + " must be an integer, not " + v.type_name());
  return v.as_int();
}

// Jinja's soft_str: str(value); Undefined prints as "".
Value soft_str(const Value& v) {
  if (v.is_string()) return v;
  return Value::string(v.to_str(), false);
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

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
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

std::string indent_text(const std::string& s0, const std::string& ind, bool first, bool blank) {
  const std::string s = s0 + "\n";  // Jinja's quirk so that splitlines keeps a last empty line
  const auto lines = py::splitlines(s);
  std::string rv;
  if (blank) {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i) rv += "\n" + ind;
      rv += lines[i];
    }
  } else {
    rv = lines.empty() ? std::string() : lines[0];
    for (size_t i = 1; i < lines.size(); ++i) rv += "\n" + (lines[i].empty() ? "" : ind) + lines[i];
  }
  if (first) rv = ind + rv;
  return rv;
}

// select/reject/selectattr/rejectattr share this.
Value select_items(Interpreter& in, const Value& seq, CallArgs& a, bool by_attr, bool keep) {
  // Jinja guards these filters with `if value:`, so a falsy value (None, undefined, 0, "")
  // yields nothing before the arguments are even looked at: `tools | selectattr(...)` with
  // tools = None is an empty sequence.
  if (!seq.truthy()) return Value::generator({});
  const std::vector<Value> items = iterable_items(in, seq);
  size_t next_arg = 0;
  std::string attr;
  if (by_attr) {
    const Value& at = arg(a, 0, "attr");
    if (!at.is_string()) in.fail(Kind::Runtime, "selectattr/rejectattr need an attribute name");
    attr = at.str();
    next_arg = 1;
  }
  std::string test;
  CallArgs test_args;
  if (next_arg < a.positional.size()) {
    if (!a.positional[next_arg].is_string())
      in.fail(Kind::Runtime, "the test name must be a string");
    test = a.positional[next_arg].str();
    test_args.positional.assign(a.positional.begin() + static_cast<long>(next_arg) + 1,
                                a.positional.end());
  }
  std::vector<Value> out;
  in.charge(items.size());
  for (const auto& item : items) {
    const Value v = by_attr ? attr_path(in, item, attr) : item;
    const bool ok = test.empty() ? v.truthy() : apply_test(in, test, v, test_args);
    if (ok == keep) out.push_back(item);
  }
  return Value::generator(std::move(out));
}

// transformers' tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False),
// which hands its arguments to Python's json.dumps (Jinja's own tojson, with indent first and
// HTML escaping, is replaced).
Value tojson_filter(Interpreter& in, const Value& v, const CallArgs& a) {
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
  const Value& indent = bound[1];
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

// Jinja's wordwrap: textwrap.wrap for each line of the text, lines joined by wrapstring
// (default "\n"); empty lines stay.
Value wordwrap_filter(Interpreter& in, const Value& v, const CallArgs& a) {
  if (v.is_undefined()) in.fail(Kind::Undefined, "wordwrap of an undefined value");
  if (!v.is_string())
    in.fail(Kind::Type, "'" + v.type_name() + "' object has no attribute 'splitlines'");
  const int64_t width = int_arg(in, arg(a, 0, "width"), 79, "width");
  const Value& long_words = arg(a, 1, "break_long_words");
  const Value& wrapstring = arg(a, 2, "wrapstring");
  const Value& hyphens = arg(a, 3, "break_on_hyphens");
  if (!wrapstring.is_undefined() && !wrapstring.is_none() && !wrapstring.is_string())
    in.fail(Kind::Type, "wordwrap: wrapstring must be a string, not " + wrapstring.type_name());
  const std::string sep = wrapstring.is_string() ? wrapstring.str() : "\n";
  py::WrapOptions o;
  o.break_long_words = long_words.is_undefined() || long_words.truthy();
  o.split_on_hyphens = hyphens.is_undefined() || (hyphens.is_bool() && hyphens.as_bool());
  o.break_long_on_hyphens = hyphens.is_undefined() || hyphens.truthy();
  const std::vector<std::string> paragraphs = py::splitlines(v.str());
  if (!paragraphs.empty() && width <= 0)
    in.fail(Kind::Runtime, "invalid width " + std::to_string(width) + " (must be > 0)");
  o.width = static_cast<size_t>(std::max<int64_t>(width, 1));
  in.charge(v.str().size());
  std::string out;
  for (size_t p = 0; p < paragraphs.size(); ++p) {
    if (p) out += sep;
    const std::vector<std::string> lines = py::wrap(paragraphs[p], o);
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i) out += sep;
      out += lines[i];
    }
    in.check_size(out.size());
  }
  const bool trusted = v.str_ref().fully_trusted() &&
                       (!wrapstring.is_string() || wrapstring.str_ref().fully_trusted());
  return Value::string(std::move(out), trusted);
}

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
          const Value& msg = arg(a, 0, "message");
          in.fail(Kind::Raised, msg.to_str());
        });
    m["strftime_now"] = make_global("strftime_now", [](Interpreter& in, CallArgs& a) {
      const Value& f = arg(a, 0, "format");
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

Value apply_filter_impl(Interpreter& in, std::string_view name, const Value& v, CallArgs& a) {
  auto str_result = [&](std::string s, bool trusted) {
    in.check_size(s.size());
    return Value::string(std::move(s), trusted);
  };
  const bool v_trusted = v.is_string() && v.str_ref().fully_trusted();
  if (name == "trim") {
    const Value& chars = arg(a, 0, "chars");
    std::optional<std::string> c;
    if (chars.is_string()) c = chars.str();
    return str_result(py::strip(soft_str(v).str(), c, true, true), v_trusted);
  }
  if (name == "upper") return str_result(py::upper(soft_str(v).str()), v_trusted);
  if (name == "lower") return str_result(py::lower(soft_str(v).str()), v_trusted);
  if (name == "title") return str_result(py::title(soft_str(v).str()), v_trusted);
  if (name == "capitalize") return str_result(py::capitalize(soft_str(v).str()), v_trusted);
  if (name == "string") return soft_str(v);
  if (name == "safe" || name == "forceescape" || name == "e" || name == "escape") {
    if (name == "safe") return v;
    return str_result(html_escape(soft_str(v).str()), false);
  }
  if (name == "length" || name == "count")
    return Value::integer(static_cast<int64_t>(py_len(in, v)));
  if (name == "wordcount") {
    const std::string s = soft_str(v).str();
    int64_t n = 0;
    bool in_word = false;
    for (unsigned char c : s) {
      const bool w = std::isalnum(c) || c == '_' || c >= 0x80;
      if (w && !in_word) ++n;
      in_word = w;
    }
    return Value::integer(n);
  }
  if (name == "default" || name == "d") {
    const bool boolean = arg(a, 1, "boolean").truthy();
    if (v.is_undefined() || (boolean && !v.truthy())) {
      const Value& dflt = arg(a, 0, "default_value");
      return dflt.is_undefined() ? Value::string("") : dflt;
    }
    return v;
  }
  if (name == "replace") {
    const Value s = soft_str(v);
    const Value& from = arg(a, 0, "old");
    const Value& to = arg(a, 1, "new");
    const int64_t count = int_arg(in, arg(a, 2, "count"), -1, "count");
    const bool trusted = v_trusted && (!to.is_string() || to.str_ref().fully_trusted());
    const std::string f = from.to_str(), t = to.to_str();
    if (f.empty()) {
      in.check_size(s.str().size() + (s.str().size() + 1) * t.size());
    } else if (t.size() > f.size()) {
      in.check_size(s.str().size() + py::count(s.str(), f) * (t.size() - f.size()));
    }
    return str_result(py::replace(s.str(), f, t, count), trusted);
  }
  if (name == "tojson") return tojson_filter(in, v, a);
  if (name == "items") {
    if (v.is_undefined()) return Value::list();
    if (!v.is_dict() || v.dict_data().is_namespace)
      in.fail(Kind::Type, "Can only get item pairs from a mapping.");
    std::vector<Value> out;
    out.reserve(v.dict_data().items.size());
    for (const auto& [k, x] : v.dict_data().items) out.push_back(Value::tuple({k, x}));
    return Value::list(std::move(out));
  }
  if (name == "dictsort") {
    if (!v.is_dict()) in.fail(Kind::Type, "dictsort: can only sort a mapping");
    const bool cs = arg(a, 0, "case_sensitive").truthy();
    const Value& by = arg(a, 1, "by");
    const bool by_value = by.is_string() && by.str() == "value";
    const bool reverse = arg(a, 2, "reverse").truthy();
    std::vector<Value> out;
    for (const auto& [k, x] : v.dict_data().items) out.push_back(Value::tuple({k, x}));
    std::stable_sort(out.begin(), out.end(), [&](const Value& p, const Value& q) {
      const size_t i = by_value ? 1 : 0;
      const Value& x = p.list_data().items[i];
      const Value& y = q.list_data().items[i];
      return reverse ? sort_less(in, y, x, cs) : sort_less(in, x, y, cs);
    });
    return Value::list(std::move(out));
  }
  if (name == "list") {
    if (v.is_list() && !v.list_data().is_generator && !v.list_data().is_tuple) return v;
    return Value::list(iterable_items(in, v));
  }
  if (name == "first") {
    if (v.is_string()) {
      if (v.str().empty()) return Value::undefined("No first item, sequence was empty.");
      size_t i = 0;
      py::decode(v.str(), i);
      return Value::string(v.str().substr(0, i), v_trusted);
    }
    const auto items = iterable_items(in, v);
    return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
  }
  if (name == "last") {
    if (v.is_list() && v.list_data().is_generator)
      in.fail(Kind::Type, "'generator' object is not reversible");
    const auto items = iterable_items(in, v);
    return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
  }
  if (name == "reverse") {
    if (v.is_string()) {
      auto off = utf8_offsets(v.str());
      std::string out;
      for (size_t i = off.size() - 1; i > 0; --i)
        out.append(v.str(), off[i - 1], off[i] - off[i - 1]);
      return str_result(std::move(out), v_trusted);
    }
    auto items = iterable_items(in, v);
    std::reverse(items.begin(), items.end());
    return Value::generator(std::move(items));
  }
  if (name == "join") {
    const Value& sep = arg(a, 0, "d");
    const Value& attr = arg(a, 1, "attribute");
    const auto items = iterable_items(in, v);
    auto d = std::make_shared<StrData>();
    const Value sepv = sep.is_undefined() ? Value::string("") : soft_str(sep);
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) {
        append_ranges(d->trusted, d->s.size(), sepv.str_ref().trusted);
        d->s += sepv.str();
      }
      const Value item = attr.is_string() ? attr_path(in, items[i], attr.str()) : items[i];
      const Value s = soft_str(item);
      append_ranges(d->trusted, d->s.size(), s.str_ref().trusted);
      d->s += s.str();
      in.check_size(d->s.size());
    }
    return Value::string(std::move(d));
  }
  if (name == "map") {
    if (!v.truthy()) return Value::generator({});  // Jinja's `if value:` (as select_items)
    const auto items = iterable_items(in, v);
    std::vector<Value> out;
    out.reserve(items.size());
    in.charge(items.size());
    if (const Value* attr = a.kw("attribute")) {
      const Value* dflt = a.kw("default");
      for (const auto& item : items) {
        Value x = attr_path(in, item, attr->to_str());
        if (x.is_undefined() && dflt) x = *dflt;
        out.push_back(std::move(x));
      }
      return Value::generator(std::move(out));
    }
    if (a.positional.empty() || !a.positional[0].is_string())
      in.fail(Kind::Runtime, "map needs a filter name or attribute=");
    const std::string filter = a.positional[0].str();
    CallArgs fa;
    fa.positional.assign(a.positional.begin() + 1, a.positional.end());
    fa.keyword = a.keyword;
    for (const auto& item : items) out.push_back(apply_filter(in, filter, item, fa));
    return Value::generator(std::move(out));
  }
  if (name == "groupby") return filter_groupby(in, v, a);
  if (name == "wordwrap") return wordwrap_filter(in, v, a);
  if (name == "slice") return filter_slice(in, v, a);
  if (name == "select") return select_items(in, v, a, false, true);
  if (name == "reject") return select_items(in, v, a, false, false);
  if (name == "selectattr") return select_items(in, v, a, true, true);
  if (name == "rejectattr") return select_items(in, v, a, true, false);
  if (name == "unique") {
    const bool cs = arg(a, 0, "case_sensitive").truthy();
    const Value& attr = arg(a, 1, "attribute");
    const auto items = iterable_items(in, v);
    std::vector<Value> out, seen;
    in.charge(items.size() * (items.size() / 64 + 1));
    for (const auto& item : items) {
      Value key = fold_case(attr.is_string() ? attr_path(in, item, attr.str()) : item, cs);
      bool dup = false;
      for (const auto& s : seen) dup = dup || py_equal(s, key);
      if (!dup) {
        seen.push_back(std::move(key));
        out.push_back(item);
      }
    }
    return Value::generator(std::move(out));
  }
  if (name == "sort") {
    const bool reverse = arg(a, 0, "reverse").truthy();
    const bool cs = arg(a, 1, "case_sensitive").truthy();
    const Value& attr = arg(a, 2, "attribute");
    auto items = iterable_items(in, v);
    in.charge(items.size() * 8);
    std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
      const Value kx = attr.is_string() ? attr_path(in, x, attr.str()) : x;
      const Value ky = attr.is_string() ? attr_path(in, y, attr.str()) : y;
      return reverse ? sort_less(in, ky, kx, cs) : sort_less(in, kx, ky, cs);
    });
    return Value::list(std::move(items));
  }
  if (name == "min" || name == "max") {
    const bool cs = arg(a, 0, "case_sensitive").truthy();
    const Value& attr = arg(a, 1, "attribute");
    const auto items = iterable_items(in, v);
    if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
    size_t best = 0;
    for (size_t i = 1; i < items.size(); ++i) {
      const Value ki = attr.is_string() ? attr_path(in, items[i], attr.str()) : items[i];
      const Value kb = attr.is_string() ? attr_path(in, items[best], attr.str()) : items[best];
      if (name == "min" ? sort_less(in, ki, kb, cs) : sort_less(in, kb, ki, cs)) best = i;
    }
    return items[best];
  }
  if (name == "sum") {
    const Value& attr = arg(a, 0, "attribute");
    Value total = arg(a, 1, "start");
    if (total.is_undefined()) total = Value::integer(0);
    for (const auto& item : iterable_items(in, v)) {
      const Value x = attr.is_string() ? attr_path(in, item, attr.str()) : item;
      if (!x.is_number() || !total.is_number())
        in.fail(Kind::Type, "unsupported operand type(s) for +: '" + total.type_name() + "' and '" +
                                x.type_name() + "'");
      if (x.is_float() || total.is_float()) {
        total = Value::number(total.as_float() + x.as_float());
      } else {
        int64_t r;
        total = __builtin_add_overflow(total.as_int(), x.as_int(), &r)
                    ? Value::number(total.as_float() + x.as_float())
                    : Value::integer(r);
      }
    }
    return total;
  }
  if (name == "int") {
    const Value& dflt0 = arg(a, 0, "default");
    const Value dflt = dflt0.is_undefined() ? Value::integer(0) : dflt0;
    const int64_t base = int_arg(in, arg(a, 1, "base"), 10, "base");
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
  if (name == "float") {
    const Value& dflt0 = arg(a, 0, "default");
    const Value dflt = dflt0.is_undefined() ? Value::number(0.0) : dflt0;
    if (v.is_number()) return Value::number(v.as_float());
    if (v.is_string())
      if (auto d = parse_float(v.str())) return Value::number(*d);
    return dflt;
  }
  if (name == "abs") {
    if (v.is_float()) return Value::number(std::fabs(v.as_float()));
    if (v.is_number()) {
      if (v.as_int() == INT64_MIN) return Value::number(9.223372036854775808e18);
      return Value::integer(v.as_int() < 0 ? -v.as_int() : v.as_int());
    }
    in.fail(Kind::Type, "bad operand type for abs(): '" + v.type_name() + "'");
  }
  if (name == "round") {
    if (!v.is_number()) in.fail(Kind::Type, "round: a number is required");
    const int64_t precision =
        std::clamp<int64_t>(int_arg(in, arg(a, 0, "precision"), 0, "precision"), -300, 300);
    const Value& method = arg(a, 1, "method");
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
  if (name == "indent") {
    const Value& w = arg(a, 0, "width");
    std::string ind = "    ";
    if (w.is_string()) {
      ind = w.str();
    } else if (!w.is_undefined()) {
      const int64_t n = std::clamp<int64_t>(int_arg(in, w, 4, "width"), 0, 4096);
      ind = std::string(static_cast<size_t>(n), ' ');
    }
    const Value s = soft_str(v);
    in.check_size(s.str().size() + (py::count(s.str(), "\n") + 2) * ind.size());
    return str_result(
        indent_text(s.str(), ind, arg(a, 1, "first").truthy(), arg(a, 2, "blank").truthy()),
        v_trusted);
  }
  if (name == "center") {
    const int64_t width =
        std::clamp<int64_t>(int_arg(in, arg(a, 0, "width"), 80, "width"), 0,
                            static_cast<int64_t>(in.options().limits.max_output_bytes));
    CallArgs ca;
    ca.positional.push_back(Value::integer(width));
    return call_method(in, soft_str(v), "center", ca);
  }
  if (name == "batch") {
    const int64_t n = int_arg(in, arg(a, 0, "linecount"), 1, "linecount");
    if (n <= 0) in.fail(Kind::Runtime, "batch size must be positive");
    const Value& fill = arg(a, 1, "fill_with");
    const auto items = iterable_items(in, v);
    std::vector<Value> out, cur;
    for (const auto& item : items) {
      cur.push_back(item);
      if (static_cast<int64_t>(cur.size()) == n) {
        out.push_back(Value::list(std::move(cur)));
        cur.clear();
      }
    }
    if (!cur.empty()) {
      if (!fill.is_undefined() && !fill.is_none())
        while (static_cast<int64_t>(cur.size()) < n) cur.push_back(fill);
      out.push_back(Value::list(std::move(cur)));
    }
    return Value::generator(std::move(out));
  }
  if (name == "attr") {
    const Value& n = arg(a, 0, "name");
    if (!n.is_string()) in.fail(Kind::Type, "attr: name must be a string");
    // Python getattr only: a dict's keys are not attributes (its methods are), a namespace's
    // and the loop's are.
    if (v.is_dict() && v.dict_data().is_namespace) {
      if (const Value* x = v.dict_data().find(n.str())) return *x;
    } else if (v.is_loop()) {
      return v.loop_data().get(n.str());
    } else if (has_method(v, n.str())) {
      return bound_method(v, n.str());
    }
    return Value::undefined(n.str());
  }
  if (name == "pprint") return str_result(v.repr(), false);
  if (name == "format") {
    if (!v.is_string()) in.fail(Kind::Type, "format: the value must be a string");
    Value args = a.positional.size() == 1 ? a.positional[0] : Value::tuple(a.positional);
    return python_percent_format(in, v, args);
  }
  if (name == "truncate") {
    const Value s = soft_str(v);
    const int64_t length = int_arg(in, arg(a, 0, "length"), 255, "length");
    const bool killwords = arg(a, 1, "killwords").truthy();
    const Value& endv = arg(a, 2, "end");
    const std::string end = endv.is_string() ? endv.str() : "...";
    const int64_t leeway = int_arg(in, arg(a, 3, "leeway"), 5, "leeway");
    auto off = utf8_offsets(s.str());
    const auto n = static_cast<int64_t>(off.size() - 1);
    if (n <= length + leeway) return s;
    const int64_t keep = std::max<int64_t>(length - static_cast<int64_t>(utf8_length(end)), 0);
    std::string head = s.str().substr(0, off[static_cast<size_t>(keep)]);
    if (!killwords) {
      const size_t sp = head.rfind(' ');
      if (sp != std::string::npos) head.resize(sp);
    }
    return str_result(head + end, false);
  }
  in.fail(Kind::Runtime, "no filter named '" + std::string(name) + "'");
}

}  // namespace

Value apply_filter(Interpreter& in, std::string_view name, const Value& v, CallArgs& args) {
  return apply_filter_impl(in, name, v, args);
}

bool apply_test(Interpreter& in, std::string_view name, const Value& v, CallArgs& a) {
  const Value& x = arg(a, 0, "other");
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "boolean") return v.is_bool();
  if (name == "true") return v.is_bool() && v.as_bool();
  if (name == "false") return v.is_bool() && !v.as_bool();
  if (name == "string") return v.is_string();
  if (name == "number") return v.is_number();
  if (name == "integer") return v.is_int();
  if (name == "float") return v.is_float();
  if (name == "mapping") return v.is_dict() && !v.dict_data().is_namespace;
  if (name == "iterable")
    return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined() || v.is_loop();
  if (name == "sequence")
    return v.is_string() || (v.is_list() && !v.list_data().is_generator) ||
           (v.is_dict() && !v.dict_data().is_namespace) || v.is_undefined();
  if (name == "callable") return v.is_callable() || v.is_loop();  // LoopContext has __call__
  if (name == "escaped") return false;
  if (name == "lower") return v.is_string() && py::is_lower(v.str());
  if (name == "upper") return v.is_string() && py::is_upper(v.str());
  if (name == "even" || name == "odd" || name == "divisibleby") {
    if (!v.is_number() || v.is_float()) {
      if (v.is_float() && name == "divisibleby") {
        const double d = x.as_float();
        return d != 0 && std::fmod(v.as_float(), d) == 0;
      }
      in.fail(Kind::Type,
              "test '" + std::string(name) + "' needs an integer, not " + v.type_name());
    }
    if (name == "even") return v.as_int() % 2 == 0;
    if (name == "odd") return v.as_int() % 2 != 0;
    if (!x.is_number()) in.fail(Kind::Type, "divisibleby needs a number");
    if (x.is_float()) return x.as_float() != 0 && std::fmod(v.as_float(), x.as_float()) == 0;
    if (x.as_int() == 0) in.fail(Kind::Runtime, "integer division or modulo by zero");
    if (x.as_int() == -1) return true;
    return v.as_int() % x.as_int() == 0;
  }
  if (name == "eq" || name == "equalto" || name == "==") return py_equal(v, x);
  if (name == "ne" || name == "!=") return !py_equal(v, x);
  if (name == "sameas") {
    if (v.type() != x.type()) return false;
    if (v.is_list()) return &v.list_data() == &x.list_data();
    if (v.is_dict()) return &v.dict_data() == &x.dict_data();
    if (v.is_string()) return v.str_data() == x.str_data();
    return py_equal(v, x);
  }
  if (name == "lt" || name == "lessthan" || name == "<" || name == "le" || name == "<=" ||
      name == "gt" || name == "greaterthan" || name == ">" || name == "ge" || name == ">=") {
    const bool both_num = v.is_number() && x.is_number();
    const bool both_str = v.is_string() && x.is_string();
    if (!both_num && !both_str)
      in.fail(Kind::Type, "comparison not supported between instances of '" + v.type_name() +
                              "' and '" + x.type_name() + "'");
    int c = 0;
    if (both_num) {
      c = v.as_float() < x.as_float() ? -1 : v.as_float() > x.as_float() ? 1 : 0;
    } else {
      c = v.str().compare(x.str());
    }
    if (name == "lt" || name == "lessthan" || name == "<") return c < 0;
    if (name == "le" || name == "<=") return c <= 0;
    if (name == "gt" || name == "greaterthan" || name == ">") return c > 0;
    return c >= 0;
  }
  if (name == "in") {
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
  if (name == "filter") {
    static const char* const kFilters[] = {
        "trim",       "upper",   "lower",       "title",   "capitalize", "string",    "safe",
        "e",          "escape",  "forceescape", "length",  "count",      "wordcount", "default",
        "d",          "replace", "tojson",      "items",   "dictsort",   "list",      "first",
        "last",       "reverse", "join",        "map",     "select",     "reject",    "selectattr",
        "rejectattr", "unique",  "sort",        "min",     "max",        "sum",       "int",
        "float",      "abs",     "round",       "indent",  "center",     "batch",     "attr",
        "pprint",     "format",  "truncate",    "groupby", "slice",      "wordwrap"};
    if (!v.is_string()) return false;
    for (const char* f : kFilters)
      if (v.str() == f) return true;
    return false;
  }
  if (name == "test") {
    static const char* const kTests[] = {
        "defined",  "undefined",   "none",   "boolean", "true",     "false",       "string",
        "number",   "integer",     "float",  "mapping", "iterable", "sequence",    "callable",
        "escaped",  "lower",       "upper",  "even",    "odd",      "divisibleby", "eq",
        "equalto",  "ne",          "sameas", "lt",      "le",       "gt",          "ge",
        "lessthan", "greaterthan", "in",     "filter",  "test"};
    if (!v.is_string()) return false;
    for (const char* t : kTests)
      if (v.str() == t) return true;
    return false;
  }
  in.fail(Kind::Runtime, "no test named '" + std::string(name) + "'");
}

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
