#include "chat/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "util/error.h"

namespace hearth::chat {

Value Value::undefined(std::string name) {
  Value v;
  if (!name.empty()) v.ptr_ = std::make_shared<StrData>(StrData{std::move(name), {}});
  return v;
}
Value Value::none() {
  Value v;
  v.type_ = Type::None;
  return v;
}
Value Value::boolean(bool b) {
  Value v;
  v.type_ = Type::Bool;
  v.u_.b = b;
  return v;
}
Value Value::integer(int64_t i) {
  Value v;
  v.type_ = Type::Int;
  v.u_.i = i;
  return v;
}
Value Value::number(double d) {
  Value v;
  v.type_ = Type::Float;
  v.u_.d = d;
  return v;
}
Value Value::string(std::string s, bool trusted) {
  auto d = std::make_shared<StrData>();
  if (trusted && !s.empty()) d->trusted.push_back({0, static_cast<uint32_t>(s.size())});
  d->s = std::move(s);
  return string(std::move(d));
}
Value Value::string(std::shared_ptr<const StrData> s) {
  Value v;
  v.type_ = Type::String;
  v.ptr_ = std::const_pointer_cast<StrData>(std::move(s));
  return v;
}
uint32_t nesting_depth(const Value& v) {
  switch (v.type()) {
    case Value::Type::List:
      return v.list_data().depth;
    case Value::Type::Dict:
      return v.dict_data().depth;
    case Value::Type::Loop: {
      uint32_t d = 0;
      for (const auto& x : v.loop_data().items) d = std::max(d, nesting_depth(x));
      return d + 1;
    }
    case Value::Type::Callable:
      return nesting_depth(v.callable_data().bound_self) + 1;
    default:
      return 0;
  }
}

bool reaches(const Value& v, const DictData* target, int depth) {
  if (depth > static_cast<int>(kMaxNesting) + 2) return true;
  switch (v.type()) {
    case Value::Type::List:
      for (const auto& x : v.list_data().items)
        if (reaches(x, target, depth + 1)) return true;
      return false;
    case Value::Type::Dict:
      if (&v.dict_data() == target) return true;
      for (const auto& kv : v.dict_data().items)
        if (reaches(kv.second, target, depth + 1)) return true;
      return false;
    case Value::Type::Loop:
      for (const auto& x : v.loop_data().items)
        if (reaches(x, target, depth + 1)) return true;
      return false;
    case Value::Type::Callable:
      return reaches(v.callable_data().bound_self, target, depth + 1);
    default:
      return false;
  }
}

Value Value::list(std::vector<Value> items) {
  uint32_t depth = 0;
  for (const auto& x : items) depth = std::max(depth, nesting_depth(x));
  if (depth + 1 > kMaxNesting) fail("values nested more than {} levels deep", kMaxNesting);
  Value v;
  v.type_ = Type::List;
  auto l = std::make_shared<ListData>();
  l->depth = depth + 1;
  l->items = std::move(items);
  v.ptr_ = std::move(l);
  return v;
}
Value Value::tuple(std::vector<Value> items) {
  Value v = list(std::move(items));
  v.list_data().is_tuple = true;
  return v;
}
Value Value::generator(std::vector<Value> items) {
  Value v = list(std::move(items));
  v.list_data().is_generator = true;
  return v;
}
Value Value::dict() {
  Value v;
  v.type_ = Type::Dict;
  v.ptr_ = std::make_shared<DictData>();
  return v;
}
Value Value::name_space() {
  Value v = dict();
  v.dict_data().is_namespace = true;
  return v;
}
Value Value::loop(std::shared_ptr<LoopData> l) {
  Value v;
  v.type_ = Type::Loop;
  v.ptr_ = std::move(l);
  return v;
}
Value Value::callable(std::shared_ptr<Callable> c) {
  Value v;
  v.type_ = Type::Callable;
  v.ptr_ = std::move(c);
  return v;
}

Value Value::from_json(const nlohmann::ordered_json& j, bool trusted_strings) {
  using J = nlohmann::ordered_json::value_t;
  switch (j.type()) {
    case J::null:
      return none();
    case J::boolean:
      return boolean(j.get<bool>());
    case J::number_integer:
      return integer(j.get<int64_t>());
    case J::number_unsigned: {
      const uint64_t u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return number(static_cast<double>(u));
      return integer(static_cast<int64_t>(u));
    }
    case J::number_float:
      return number(j.get<double>());
    case J::string:
      return string(j.get<std::string>(), trusted_strings);
    case J::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(from_json(e, trusted_strings));
      return list(std::move(items));
    }
    case J::object: {
      Value d = dict();
      auto& items = d.dict_data().items;
      items.reserve(j.size());
      for (const auto& [k, e] : j.items()) {
        items.emplace_back(string(k), from_json(e, trusted_strings));
        d.dict_data().depth = std::max(d.dict_data().depth, nesting_depth(items.back().second) + 1);
      }
      if (d.dict_data().depth > kMaxNesting)
        fail("values nested more than {} levels deep", kMaxNesting);
      return d;
    }
    default:
      return none();
  }
}

std::string Value::undefined_name() const {
  return type_ == Type::Undefined && ptr_ ? str() : std::string();
}

bool Value::truthy() const {
  switch (type_) {
    case Type::Undefined:
    case Type::None:
      return false;
    case Type::Bool:
      return u_.b;
    case Type::Int:
      return u_.i != 0;
    case Type::Float:
      return u_.d != 0.0;
    case Type::String:
      return !str().empty();
    case Type::List:
      return list_data().is_generator || !list_data().items.empty();
    case Type::Dict:
      return dict_data().is_namespace || !dict_data().items.empty();
    default:
      return true;
  }
}

std::string py_float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, r.ptr);
  // sci = [-]D[.DDD]e[+-]XX
  const bool neg = sci[0] == '-';
  if (neg) sci.erase(0, 1);
  const size_t epos = sci.find('e');
  std::string digits = sci.substr(0, epos);
  const int exp = std::stoi(sci.substr(epos + 1));
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  std::string out = neg ? "-" : "";
  if (exp >= -4 && exp < 16) {  // Python's repr switches to exponent form outside this
    if (exp < 0) {
      out += "0.";
      out.append(static_cast<size_t>(-exp - 1), '0');
      out += digits;
    } else if (static_cast<size_t>(exp) + 1 >= digits.size()) {
      out += digits;
      out.append(static_cast<size_t>(exp) + 1 - digits.size(), '0');
      out += ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(exp) + 1);
      out += '.';
      out += digits.substr(static_cast<size_t>(exp) + 1);
    }
    return out;
  }
  out += digits[0];
  if (digits.size() > 1) {
    out += '.';
    out.append(digits, 1, std::string::npos);
  }
  char e[16];
  std::snprintf(e, sizeof e, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
  out += e;
  return out;
}

namespace {

void repr_string(std::string& out, std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char q = has_single && !has_double ? '"' : '\'';
  out += q;
  for (unsigned char c : s) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c == static_cast<unsigned char>(q)) {
          out += '\\';
          out += static_cast<char>(c);
        } else if (c < 0x20 || c == 0x7f) {
          char b[8];
          std::snprintf(b, sizeof b, "\\x%02x", c);
          out += b;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += q;
}

void repr_into(std::string& out, const Value& v, int depth);

void str_into(std::string& out, const Value& v, int depth = 0) {
  if (depth > 256) {  // deeper than any real data; keeps the recursion bounded
    out += "...";
    return;
  }
  switch (v.type()) {
    case Value::Type::Undefined:
      return;
    case Value::Type::None:
      out += "None";
      return;
    case Value::Type::Bool:
      out += v.as_bool() ? "True" : "False";
      return;
    case Value::Type::Int:
      out += std::to_string(v.as_int());
      return;
    case Value::Type::Float:
      out += py_float_repr(v.as_float());
      return;
    case Value::Type::String:
      out += v.str();
      return;
    case Value::Type::List: {
      const ListData& l = v.list_data();
      if (l.is_generator) {
        out += "<generator object>";
        return;
      }
      out += l.is_tuple ? '(' : '[';
      for (size_t i = 0; i < l.items.size(); ++i) {
        if (i) out += ", ";
        repr_into(out, l.items[i], depth + 1);
      }
      if (l.is_tuple && l.items.size() == 1) out += ',';
      out += l.is_tuple ? ')' : ']';
      return;
    }
    case Value::Type::Dict: {
      const DictData& d = v.dict_data();
      if (d.is_namespace) {
        out += "<Namespace ";
        for (size_t i = 0; i < d.items.size(); ++i) {
          if (i) out += ", ";
          str_into(out, d.items[i].first, depth + 1);
          out += '=';
          repr_into(out, d.items[i].second, depth + 1);
        }
        out += ">";
        return;
      }
      out += '{';
      for (size_t i = 0; i < d.items.size(); ++i) {
        if (i) out += ", ";
        repr_into(out, d.items[i].first, depth + 1);
        out += ": ";
        repr_into(out, d.items[i].second, depth + 1);
      }
      out += '}';
      return;
    }
    case Value::Type::Loop:
      out += "<LoopContext>";
      return;
    case Value::Type::Callable:
      out += "<function " + v.callable_data().name + ">";
      return;
  }
}

void repr_into(std::string& out, const Value& v, int depth) {
  if (v.is_string()) {
    repr_string(out, v.str());
  } else if (v.is_undefined()) {
    out += "Undefined";
  } else {
    str_into(out, v, depth);
  }
}

}  // namespace

std::string Value::to_str() const {
  if (type_ == Type::String) return str();
  std::string out;
  str_into(out, *this);
  return out;
}

std::string Value::repr() const {
  std::string out;
  repr_into(out, *this, 0);
  return out;
}

std::string Value::type_name() const {
  switch (type_) {
    case Type::Undefined:
      return "Undefined";
    case Type::None:
      return "NoneType";
    case Type::Bool:
      return "bool";
    case Type::Int:
      return "int";
    case Type::Float:
      return "float";
    case Type::String:
      return "str";
    case Type::List:
      return list_data().is_generator ? "generator" : list_data().is_tuple ? "tuple" : "list";
    case Type::Dict:
      return dict_data().is_namespace ? "Namespace" : "dict";
    case Type::Loop:
      return "LoopContext";
    case Type::Callable:
      return "function";
  }
  return "object";
}

nlohmann::ordered_json Value::to_json() const {
  switch (type_) {
    case Type::None:
      return nullptr;
    case Type::Bool:
      return as_bool();
    case Type::Int:
      return as_int();
    case Type::Float:
      return as_float();
    case Type::String:
      return str();
    case Type::List: {
      if (list_data().is_generator) fail("Object of type generator is not JSON serializable");
      auto j = nlohmann::ordered_json::array();
      for (const auto& e : list_data().items) j.push_back(e.to_json());
      return j;
    }
    case Type::Dict: {
      if (dict_data().is_namespace) fail("Object of type Namespace is not JSON serializable");
      auto j = nlohmann::ordered_json::object();
      for (const auto& [k, e] : dict_data().items) {
        if (!k.is_string()) fail("dict key {} is not a JSON object key", k.repr());
        j[k.str()] = e.to_json();
      }
      return j;
    }
    default:
      fail("Object of type {} is not JSON serializable", type_name());
  }
}

const Value* ListData::field(std::string_view name) const {
  for (size_t i = 0; i < field_names.size() && i < items.size(); ++i)
    if (field_names[i] == name) return &items[i];
  return nullptr;
}

bool is_hashable(const Value& v) {
  switch (v.type()) {
    case Value::Type::List: {
      const ListData& l = v.list_data();
      if (!l.is_tuple || l.is_generator) return false;
      for (const auto& x : l.items)
        if (!is_hashable(x)) return false;
      return true;
    }
    case Value::Type::Dict:
    case Value::Type::Loop:
    case Value::Type::Callable:
      return false;
    default:
      return true;
  }
}

const Value* DictData::find(std::string_view key) const {
  for (const auto& kv : items)
    if (kv.first.is_string() && kv.first.str() == key) return &kv.second;
  return nullptr;
}
Value* DictData::find(std::string_view key) {
  for (auto& kv : items)
    if (kv.first.is_string() && kv.first.str() == key) return &kv.second;
  return nullptr;
}
const Value* DictData::find(const Value& key) const {
  if (key.is_string()) return find(std::string_view(key.str()));
  for (const auto& kv : items)
    if (py_equal(kv.first, key)) return &kv.second;
  return nullptr;
}
void DictData::set(std::string key, Value v) {
  set(Value::string(std::move(key)), std::move(v));
}
void DictData::set(Value key, Value v) {
  if (!is_hashable(key)) fail("unhashable type: '{}'", key.type_name());
  const uint32_t d = std::max(nesting_depth(v), nesting_depth(key)) + 1;
  if (d > kMaxNesting) fail("values nested more than {} levels deep", kMaxNesting);
  depth = std::max(depth, d);
  for (auto& kv : items) {
    if (py_equal(kv.first, key)) {
      kv.second = std::move(v);
      return;
    }
  }
  items.emplace_back(std::move(key), std::move(v));
}

Value LoopData::get(std::string_view attr) const {
  const size_t n = items.size();
  if (attr == "index") return Value::integer(static_cast<int64_t>(index0 + 1));
  if (attr == "index0") return Value::integer(static_cast<int64_t>(index0));
  if (attr == "revindex") return Value::integer(static_cast<int64_t>(n - index0));
  if (attr == "revindex0") return Value::integer(static_cast<int64_t>(n - index0 - 1));
  if (attr == "first") return Value::boolean(index0 == 0);
  if (attr == "last") return Value::boolean(index0 + 1 == n);
  if (attr == "length") return Value::integer(static_cast<int64_t>(n));
  if (attr == "depth") return Value::integer(static_cast<int64_t>(depth0 + 1));
  if (attr == "depth0") return Value::integer(static_cast<int64_t>(depth0));
  if (attr == "previtem")
    return index0 > 0 && index0 <= n ? items[index0 - 1]
                                     : Value::undefined("there is no previous item");
  if (attr == "nextitem")
    return index0 + 1 < n ? items[index0 + 1] : Value::undefined("there is no next item");
  return Value::undefined(std::string(attr));
}

const Value* CallArgs::kw(std::string_view name) const {
  for (const auto& [k, v] : keyword)
    if (k == name) return &v;
  return nullptr;
}

bool py_equal(const Value& a, const Value& b, int depth) {
  using T = Value::Type;
  if (depth > 256) return false;  // bounded recursion (no real data nests this deep)
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_float() == b.as_float();
    return a.as_int() == b.as_int();
  }
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case T::Undefined:
    case T::None:
      return true;
    case T::String:
      return a.str() == b.str();
    case T::List: {
      const auto& x = a.list_data();
      const auto& y = b.list_data();
      if (&x == &y) return true;
      if (x.is_generator || y.is_generator || x.is_tuple != y.is_tuple) return false;
      if (x.items.size() != y.items.size()) return false;
      for (size_t i = 0; i < x.items.size(); ++i)
        if (!py_equal(x.items[i], y.items[i], depth + 1)) return false;
      return true;
    }
    case T::Dict: {
      const auto& x = a.dict_data();
      const auto& y = b.dict_data();
      if (&x == &y) return true;
      if (x.is_namespace || y.is_namespace) return false;
      if (x.items.size() != y.items.size()) return false;
      for (const auto& [k, v] : x.items) {
        const Value* o = y.find(k);
        if (!o || !py_equal(v, *o, depth + 1)) return false;
      }
      return true;
    }
    case T::Loop:
      return &a.loop_data() == &b.loop_data();
    case T::Callable:
      return &a.callable_data() == &b.callable_data();
    default:
      return false;
  }
}

size_t utf8_length(std::string_view s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++i)
    n += (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 || i == 0;
  return n;
}

std::vector<uint32_t> utf8_offsets(std::string_view s) {
  std::vector<uint32_t> off;
  off.reserve(s.size() + 1);
  for (size_t i = 0; i < s.size(); ++i)
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 || i == 0)
      off.push_back(static_cast<uint32_t>(i));
  off.push_back(static_cast<uint32_t>(s.size()));
  return off;
}

}  // namespace hearth::chat
