#include "chat/py_json.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "chat/py_string.h"
#include "util/error.h"

namespace hearth::chat {
namespace {

// \uXXXX for one UTF-16 unit (lowercase hex, as Python).
void append_u_escape(std::string& out, uint32_t unit) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) out += kHex[(unit >> shift) & 0xF];
}

// Python's encoder: the short escapes, other controls as \u00XX; with ensure_ascii also
// everything outside ' '..'~' (DEL included), code points above U+FFFF as surrogate pairs.
void json_string(std::string& out, std::string_view s, bool ensure_ascii) {
  out += '"';
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
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
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20 || (ensure_ascii && c == 0x7f)) {
          append_u_escape(out, c);
        } else if (c >= 0x80 && ensure_ascii) {
          const uint32_t cp = py::decode(s, i);  // advances i past the whole sequence
          if (cp > 0xFFFF) {
            append_u_escape(out, 0xD800 + ((cp - 0x10000) >> 10));
            append_u_escape(out, 0xDC00 + ((cp - 0x10000) & 0x3FF));
          } else {
            append_u_escape(out, cp);
          }
          continue;
        } else {
          out += static_cast<char>(c);
        }
    }
    ++i;
  }
  out += '"';
}

std::string float_text(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  return py_float_repr(d);
}

class JsonWriter {
 public:
  JsonWriter(const JsonDumpOptions& o, std::string& out)
      : o_(o),
        out_(out),
        item_sep_(o.item_separator ? *o.item_separator
                  : o.indent       ? ","
                                   : ", ") {}

  void value(const Value& v, size_t level);

 private:
  void newline(size_t level) {
    if (!o_.indent) return;
    out_ += '\n';
    for (size_t i = 0; i < level; ++i) out_ += *o_.indent;
    if (out_.size() > o_.max_bytes) throw JsonTooLarge("tojson: the output is too large");
  }
  void list(const ListData& l, size_t level);
  void dict(const DictData& d, size_t level);

  const JsonDumpOptions& o_;
  std::string& out_;
  std::string item_sep_;
};

void JsonWriter::value(const Value& v, size_t level) {
  if (level > kMaxNesting) fail("tojson: value nested too deeply");
  if (out_.size() > o_.max_bytes) throw JsonTooLarge("tojson: the output is too large");
  switch (v.type()) {
    case Value::Type::None:
      out_ += "null";
      return;
    case Value::Type::Bool:
      out_ += v.as_bool() ? "true" : "false";
      return;
    case Value::Type::Int:
      out_ += std::to_string(v.as_int());
      return;
    case Value::Type::Float:
      out_ += float_text(v.as_float());
      return;
    case Value::Type::String:
      json_string(out_, v.str(), o_.ensure_ascii);
      return;
    case Value::Type::List:
      if (v.list_data().is_generator) fail("Object of type generator is not JSON serializable");
      list(v.list_data(), level);
      return;
    case Value::Type::Dict:
      if (v.dict_data().is_namespace) fail("Object of type Namespace is not JSON serializable");
      dict(v.dict_data(), level);
      return;
    default:
      fail("Object of type {} is not JSON serializable", v.type_name());
  }
}

void JsonWriter::list(const ListData& l, size_t level) {
  if (l.items.empty()) {
    out_ += "[]";
    return;
  }
  out_ += '[';
  for (size_t i = 0; i < l.items.size(); ++i) {
    if (i) out_ += item_sep_;
    newline(level + 1);
    value(l.items[i], level + 1);
  }
  newline(level);
  out_ += ']';
}

// Python's json turns None/bool/int/float keys into their JSON text; others are a TypeError.
std::string key_text(const Value& k) {
  switch (k.type()) {
    case Value::Type::String:
      return k.str();
    case Value::Type::None:
      return "null";
    case Value::Type::Bool:
      return k.as_bool() ? "true" : "false";
    case Value::Type::Int:
      return std::to_string(k.as_int());
    case Value::Type::Float:
      return float_text(k.as_float());
    default:
      fail("keys must be str, int, float, bool or None, not {}", k.type_name());
  }
}

// sort_keys sorts the keys themselves (before they become text), so numbers sort as numbers
// and a mix of str and numbers is Python's TypeError.
bool key_less(const Value& a, const Value& b) {
  if (a.is_string() && b.is_string()) return a.str() < b.str();  // UTF-8 bytes: code point order
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_float() < b.as_float();
    return a.as_int() < b.as_int();
  }
  fail("'<' not supported between instances of '{}' and '{}'", b.type_name(), a.type_name());
}

void JsonWriter::dict(const DictData& d, size_t level) {
  if (d.items.empty()) {
    out_ += "{}";
    return;
  }
  std::vector<const std::pair<Value, Value>*> order;
  order.reserve(d.items.size());
  for (const auto& kv : d.items) order.push_back(&kv);
  if (o_.sort_keys)
    std::stable_sort(order.begin(), order.end(),
                     [](auto* a, auto* b) { return key_less(a->first, b->first); });
  out_ += '{';
  for (size_t i = 0; i < order.size(); ++i) {
    if (i) out_ += item_sep_;
    newline(level + 1);
    json_string(out_, key_text(order[i]->first), o_.ensure_ascii);
    out_ += o_.key_separator;
    value(order[i]->second, level + 1);
  }
  newline(level);
  out_ += '}';
}

}  // namespace

std::string py_json_dumps(const Value& v, const JsonDumpOptions& options) {
  std::string out;
  JsonWriter(options, out).value(v, 0);
  return out;
}

}  // namespace hearth::chat
