#include "gguf/value.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "util/error.h"

namespace hearth::gguf {
namespace {

bool same_bits(double a, double b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

bool same_floats(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k)
    if (!same_bits(a[k], b[k])) return false;
  return true;
}

// Length of the valid UTF-8 sequence starting at s[k], or 0 when it is not one.
size_t utf8_seq_len(std::string_view s, size_t k) {
  const auto c = static_cast<unsigned char>(s[k]);
  size_t n = 0;
  uint32_t cp = 0;
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0) {
    n = 2;
    cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3;
    cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (k + n > s.size()) return 0;
  for (size_t j = 1; j < n; ++j) {
    const auto d = static_cast<unsigned char>(s[k + j]);
    if ((d & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (d & 0x3F);
  }
  // Reject overlong forms, surrogates and values past U+10FFFF.
  if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000)) return 0;
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

std::string format_float(double v, bool single) {
  std::string s = single ? fmt::format("{}", static_cast<float>(v)) : fmt::format("{}", v);
  // Python prints integral floats with a trailing ".0".
  if (std::isfinite(v) && s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

std::string format_int(ValueType t, int64_t v) {
  if (t == ValueType::BOOL) return v != 0 ? "True" : "False";
  if (t == ValueType::UINT64) return fmt::format("{}", static_cast<uint64_t>(v));
  return fmt::format("{}", v);
}

bool in_range(ValueType t, int64_t v) {
  switch (t) {
    case ValueType::UINT8:
      return v >= 0 && v <= std::numeric_limits<uint8_t>::max();
    case ValueType::INT8:
      return v >= std::numeric_limits<int8_t>::min() && v <= std::numeric_limits<int8_t>::max();
    case ValueType::UINT16:
      return v >= 0 && v <= std::numeric_limits<uint16_t>::max();
    case ValueType::INT16:
      return v >= std::numeric_limits<int16_t>::min() && v <= std::numeric_limits<int16_t>::max();
    case ValueType::UINT32:
      return v >= 0 && v <= std::numeric_limits<uint32_t>::max();
    case ValueType::INT32:
      return v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
    case ValueType::BOOL:
      return v == 0 || v == 1;
    case ValueType::UINT64:
    case ValueType::INT64:
      return true;
    default:
      return false;
  }
}

void check_int(ValueType t, int64_t v) {
  if (!is_integer_type(t)) fail("GGUF value: {} is not an integer type", value_type_name(t));
  if (!in_range(t, v)) fail("GGUF value: {} does not fit in type {}", v, value_type_name(t));
}

}  // namespace

std::string_view value_type_name(ValueType t) {
  switch (t) {
    case ValueType::UINT8:
      return "u8";
    case ValueType::INT8:
      return "i8";
    case ValueType::UINT16:
      return "u16";
    case ValueType::INT16:
      return "i16";
    case ValueType::UINT32:
      return "u32";
    case ValueType::INT32:
      return "i32";
    case ValueType::FLOAT32:
      return "f32";
    case ValueType::BOOL:
      return "bool";
    case ValueType::STRING:
      return "string";
    case ValueType::ARRAY:
      return "array";
    case ValueType::UINT64:
      return "u64";
    case ValueType::INT64:
      return "i64";
    case ValueType::FLOAT64:
      return "f64";
  }
  return "unknown";
}

bool is_valid_value_type(uint32_t t) {
  return t <= static_cast<uint32_t>(ValueType::FLOAT64);
}

bool is_integer_type(ValueType t) {
  switch (t) {
    case ValueType::UINT8:
    case ValueType::INT8:
    case ValueType::UINT16:
    case ValueType::INT16:
    case ValueType::UINT32:
    case ValueType::INT32:
    case ValueType::UINT64:
    case ValueType::INT64:
    case ValueType::BOOL:
      return true;
    default:
      return false;
  }
}

bool is_float_type(ValueType t) {
  return t == ValueType::FLOAT32 || t == ValueType::FLOAT64;
}

size_t scalar_size(ValueType t) {
  switch (t) {
    case ValueType::UINT8:
    case ValueType::INT8:
    case ValueType::BOOL:
      return 1;
    case ValueType::UINT16:
    case ValueType::INT16:
      return 2;
    case ValueType::UINT32:
    case ValueType::INT32:
    case ValueType::FLOAT32:
      return 4;
    case ValueType::UINT64:
    case ValueType::INT64:
    case ValueType::FLOAT64:
      return 8;
    case ValueType::STRING:
    case ValueType::ARRAY:
      return 0;
  }
  return 0;
}

Value Value::make_int(ValueType t, int64_t v) {
  check_int(t, v);
  Value r;
  r.type = t;
  r.i = v;
  return r;
}

Value Value::make_f32(float v) {
  Value r;
  r.type = ValueType::FLOAT32;
  r.f = v;
  return r;
}

Value Value::make_f64(double v) {
  Value r;
  r.type = ValueType::FLOAT64;
  r.f = v;
  return r;
}

Value Value::make_string(std::string v) {
  Value r;
  r.type = ValueType::STRING;
  r.str = std::move(v);
  return r;
}

Value Value::make_int_array(ValueType elem, std::vector<int64_t> v) {
  if (!is_integer_type(elem)) fail("GGUF value: {} is not an integer type", value_type_name(elem));
  for (int64_t x : v) check_int(elem, x);
  Value r;
  r.type = ValueType::ARRAY;
  r.elem_type = elem;
  r.ints = std::move(v);
  return r;
}

Value Value::make_float_array(ValueType elem, std::vector<double> v) {
  if (!is_float_type(elem)) fail("GGUF value: {} is not a float type", value_type_name(elem));
  // FLOAT32 elements are stored rounded, so that a written and re-read array compares equal.
  if (elem == ValueType::FLOAT32)
    for (double& x : v) x = static_cast<float>(x);
  Value r;
  r.type = ValueType::ARRAY;
  r.elem_type = elem;
  r.floats = std::move(v);
  return r;
}

Value Value::make_string_array(std::vector<std::string> v) {
  Value r;
  r.type = ValueType::ARRAY;
  r.elem_type = ValueType::STRING;
  r.strings = std::move(v);
  return r;
}

Value Value::make_array_array(std::vector<Value> v) {
  for (const Value& x : v)
    if (!x.is_array()) fail("GGUF value: an array of arrays holds a {}", value_type_name(x.type));
  Value r;
  r.type = ValueType::ARRAY;
  r.elem_type = ValueType::ARRAY;
  r.values = std::move(v);
  return r;
}

size_t Value::array_size() const {
  if (!is_array()) return 0;
  if (elem_type == ValueType::STRING) return strings.size();
  if (elem_type == ValueType::ARRAY) return values.size();
  if (is_float_type(elem_type)) return floats.size();
  return ints.size();
}

std::optional<int64_t> Value::as_int() const {
  if (is_integer_type(type)) return i;
  return std::nullopt;
}

std::optional<uint64_t> Value::as_u64() const {
  if (!is_integer_type(type)) return std::nullopt;
  if (type != ValueType::UINT64 && i < 0) return std::nullopt;
  return static_cast<uint64_t>(i);
}

std::optional<double> Value::as_float() const {
  if (is_float_type(type)) return f;
  if (type == ValueType::UINT64) return static_cast<double>(static_cast<uint64_t>(i));
  if (is_integer_type(type)) return static_cast<double>(i);
  return std::nullopt;
}

std::optional<bool> Value::as_bool() const {
  if (is_integer_type(type)) return i != 0;
  return std::nullopt;
}

const std::string* Value::as_string() const {
  return type == ValueType::STRING ? &str : nullptr;
}

std::string display_string(std::string_view s, char quote, size_t max_bytes) {
  std::string out(1, quote);
  size_t k = 0;
  while (k < s.size()) {
    if (k >= max_bytes) {
      out += fmt::format("{}... ({} bytes)", quote, s.size());
      return out;
    }
    const char c = s[k];
    if (c == quote || c == '\\') {
      out += '\\';
      out += c;
      ++k;
      continue;
    }
    switch (c) {
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default: {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7F) {
          out += fmt::format("\\x{:02x}", u);
        } else if (u < 0x80) {
          out += c;
        } else if (size_t n = utf8_seq_len(s, k); n > 0) {
          out.append(s.substr(k, n));
          k += n;
          continue;
        } else {
          out += fmt::format("\\x{:02x}", u);
        }
      }
    }
    ++k;
  }
  out += quote;
  return out;
}

std::string Value::to_display(size_t max_items) const {
  if (type == ValueType::STRING) return display_string(str);
  if (is_float_type(type)) return format_float(f, type == ValueType::FLOAT32);
  if (is_integer_type(type)) return format_int(type, i);
  if (!is_array()) return fmt::format("<invalid value type {}>", static_cast<uint32_t>(type));

  const size_t n = array_size();
  const size_t shown = n < max_items ? n : max_items;
  std::string out = "[";
  for (size_t k = 0; k < shown; ++k) {
    if (k > 0) out += ", ";
    if (elem_type == ValueType::STRING) {
      out += display_string(strings[k]);
    } else if (elem_type == ValueType::ARRAY) {
      out += values[k].to_display(max_items);
    } else if (is_float_type(elem_type)) {
      out += format_float(floats[k], elem_type == ValueType::FLOAT32);
    } else {
      out += format_int(elem_type, ints[k]);
    }
  }
  if (shown < n) out += fmt::format("{}... ({} items)", shown > 0 ? ", " : "", n);
  out += "]";
  return out;
}

bool Value::operator==(const Value& o) const {
  if (type != o.type) return false;
  if (type == ValueType::STRING) return str == o.str;
  if (is_float_type(type)) return same_bits(f, o.f);
  if (is_integer_type(type)) return i == o.i;
  if (!is_array()) return true;
  if (elem_type != o.elem_type) return false;
  if (elem_type == ValueType::STRING) return strings == o.strings;
  if (elem_type == ValueType::ARRAY) return values == o.values;
  if (is_float_type(elem_type)) return same_floats(floats, o.floats);
  return ints == o.ints;
}

}  // namespace hearth::gguf
