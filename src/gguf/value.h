// A GGUF metadata value: scalar, string or (possibly nested) array, owning its data.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hearth::gguf {

enum class ValueType : uint32_t {
  UINT8 = 0,
  INT8 = 1,
  UINT16 = 2,
  INT16 = 3,
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  UINT64 = 10,
  INT64 = 11,
  FLOAT64 = 12,
};

std::string_view value_type_name(ValueType t);
bool is_valid_value_type(uint32_t t);
bool is_integer_type(ValueType t);  // includes BOOL
bool is_float_type(ValueType t);
size_t scalar_size(ValueType t);  // bytes on disk of a numeric/bool scalar; 0 for STRING/ARRAY

// `s` in `quote`s: the quote and backslash escaped, \n \r \t as such, control characters and
// bytes that are not valid UTF-8 as \xNN; cut (on a UTF-8 boundary) after `max_bytes` as
// `"abc"... (1234 bytes)`. Safe for hostile input; also names keys/tensors in error messages.
std::string display_string(std::string_view s, char quote = '"', size_t max_bytes = 60);

struct Value {
  ValueType type = ValueType::UINT32;

  // make_int/make_int_array throw Error when a value does not fit the type (BOOL takes 0/1).
  // Scalars: every integer type and BOOL live in `i` (UINT64 values above INT64_MAX wrap; use
  // as_u64), floats in `f`, STRING in `str`.
  int64_t i = 0;
  double f = 0.0;
  std::string str;

  // ARRAY: elements of `elem_type` in the vector matching it; nested arrays in `values`.
  ValueType elem_type = ValueType::UINT8;
  std::vector<int64_t> ints;         // integer and bool elements
  std::vector<double> floats;        // FLOAT32/FLOAT64 elements
  std::vector<std::string> strings;  // STRING elements
  std::vector<Value> values;         // ARRAY elements

  static Value make_int(ValueType t, int64_t v);
  static Value make_u32(uint32_t v) { return make_int(ValueType::UINT32, v); }
  static Value make_i32(int32_t v) { return make_int(ValueType::INT32, v); }
  static Value make_u64(uint64_t v) { return make_int(ValueType::UINT64, static_cast<int64_t>(v)); }
  static Value make_bool(bool v) { return make_int(ValueType::BOOL, v ? 1 : 0); }
  static Value make_f32(float v);
  static Value make_f64(double v);
  static Value make_string(std::string v);
  static Value make_int_array(ValueType elem, std::vector<int64_t> v);
  static Value make_float_array(ValueType elem, std::vector<double> v);
  static Value make_string_array(std::vector<std::string> v);
  static Value make_array_array(std::vector<Value> v);

  bool is_array() const { return type == ValueType::ARRAY; }
  size_t array_size() const;

  std::optional<int64_t> as_int() const;   // any integer/bool scalar
  std::optional<uint64_t> as_u64() const;  // any integer/bool scalar that is not negative
  std::optional<double> as_float() const;  // float or integer scalar
  std::optional<bool> as_bool() const;     // BOOL or integer scalar
  const std::string* as_string() const;    // STRING only

  // Short human rendering (arrays abbreviated), for `hearth inspect`: Python-like, e.g.
  // `42`, `1e-05`, `10000.0`, `True`, `"llama"`, `[1, 2, 3, ... (512 items)]`, `[[1, 2], []]`.
  std::string to_display(size_t max_items = 8) const;

  // Equal type and content (only the fields that the type uses); floats compare bit for bit,
  // so NaN == NaN and 0.0 != -0.0 (equal means "serializes identically").
  bool operator==(const Value& o) const;
};

}  // namespace hearth::gguf
