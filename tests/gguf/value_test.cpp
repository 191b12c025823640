#include "gguf/value.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "util/error.h"

namespace hearth::gguf {
namespace {

TEST(ValueType, NamesSizesAndKinds) {
  EXPECT_EQ(value_type_name(ValueType::UINT8), "u8");
  EXPECT_EQ(value_type_name(ValueType::FLOAT64), "f64");
  EXPECT_EQ(value_type_name(ValueType::STRING), "string");
  EXPECT_EQ(value_type_name(ValueType::ARRAY), "array");
  EXPECT_EQ(value_type_name(static_cast<ValueType>(99)), "unknown");
  for (uint32_t t = 0; t <= 12; ++t) EXPECT_TRUE(is_valid_value_type(t)) << t;
  EXPECT_FALSE(is_valid_value_type(13));
  EXPECT_FALSE(is_valid_value_type(0xFFFFFFFFu));
  EXPECT_TRUE(is_integer_type(ValueType::BOOL));
  EXPECT_TRUE(is_integer_type(ValueType::UINT64));
  EXPECT_FALSE(is_integer_type(ValueType::FLOAT32));
  EXPECT_FALSE(is_integer_type(ValueType::STRING));
  EXPECT_TRUE(is_float_type(ValueType::FLOAT32));
  EXPECT_TRUE(is_float_type(ValueType::FLOAT64));
  EXPECT_FALSE(is_float_type(ValueType::INT64));
  EXPECT_EQ(scalar_size(ValueType::BOOL), 1u);
  EXPECT_EQ(scalar_size(ValueType::INT16), 2u);
  EXPECT_EQ(scalar_size(ValueType::FLOAT32), 4u);
  EXPECT_EQ(scalar_size(ValueType::UINT64), 8u);
  EXPECT_EQ(scalar_size(ValueType::STRING), 0u);
  EXPECT_EQ(scalar_size(ValueType::ARRAY), 0u);
}

TEST(Value, MakeIntChecksRange) {
  EXPECT_EQ(Value::make_int(ValueType::UINT8, 255).i, 255);
  EXPECT_THROW(Value::make_int(ValueType::UINT8, 256), Error);
  EXPECT_THROW(Value::make_int(ValueType::UINT8, -1), Error);
  EXPECT_EQ(Value::make_int(ValueType::INT8, -128).i, -128);
  EXPECT_THROW(Value::make_int(ValueType::INT8, 128), Error);
  EXPECT_THROW(Value::make_int(ValueType::UINT16, 65536), Error);
  EXPECT_THROW(Value::make_int(ValueType::INT16, -32769), Error);
  EXPECT_THROW(Value::make_int(ValueType::UINT32, 1ll << 32), Error);
  EXPECT_THROW(Value::make_int(ValueType::INT32, 1ll << 31), Error);
  EXPECT_THROW(Value::make_int(ValueType::BOOL, 2), Error);
  EXPECT_THROW(Value::make_int(ValueType::FLOAT32, 1), Error);
  EXPECT_THROW(Value::make_int(ValueType::STRING, 1), Error);
  EXPECT_THROW(Value::make_int_array(ValueType::UINT8, {1, 300}), Error);
  EXPECT_THROW(Value::make_int_array(ValueType::STRING, {}), Error);
  EXPECT_THROW(Value::make_float_array(ValueType::INT32, {}), Error);
  EXPECT_THROW(Value::make_array_array({Value::make_u32(1)}), Error);
  try {
    Value::make_int(ValueType::UINT8, 300);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("300 does not fit in type u8"), std::string::npos)
        << e.what();
  }
}

TEST(Value, Accessors) {
  const Value u = Value::make_u32(7);
  EXPECT_EQ(u.as_int(), 7);
  EXPECT_EQ(u.as_u64(), 7u);
  EXPECT_EQ(u.as_float(), 7.0);
  EXPECT_EQ(u.as_bool(), true);
  EXPECT_EQ(u.as_string(), nullptr);
  EXPECT_FALSE(u.is_array());
  EXPECT_EQ(u.array_size(), 0u);

  const Value big = Value::make_u64(18446744073709551615ull);
  EXPECT_EQ(big.as_int(), -1);  // documented wrap
  EXPECT_EQ(big.as_u64(), 18446744073709551615ull);
  EXPECT_DOUBLE_EQ(*big.as_float(), 18446744073709551615.0);

  const Value neg = Value::make_i32(-3);
  EXPECT_EQ(neg.as_u64(), std::nullopt);
  EXPECT_EQ(neg.as_float(), -3.0);

  const Value b = Value::make_bool(false);
  EXPECT_EQ(b.as_bool(), false);
  EXPECT_EQ(b.as_int(), 0);

  const Value f = Value::make_f32(0.5f);
  EXPECT_EQ(f.as_float(), 0.5);
  EXPECT_EQ(f.as_int(), std::nullopt);
  EXPECT_EQ(f.as_bool(), std::nullopt);

  const Value s = Value::make_string("hi");
  ASSERT_NE(s.as_string(), nullptr);
  EXPECT_EQ(*s.as_string(), "hi");
  EXPECT_EQ(s.as_int(), std::nullopt);
  EXPECT_EQ(s.as_float(), std::nullopt);

  const Value a = Value::make_string_array({"a", "b", "c"});
  EXPECT_TRUE(a.is_array());
  EXPECT_EQ(a.array_size(), 3u);
  EXPECT_EQ(a.as_int(), std::nullopt);
  EXPECT_EQ(Value::make_float_array(ValueType::FLOAT64, {1, 2}).array_size(), 2u);
  EXPECT_EQ(Value::make_int_array(ValueType::INT64, {1, 2, 3, 4}).array_size(), 4u);
  EXPECT_EQ(Value::make_array_array({a, a}).array_size(), 2u);
}

TEST(Value, Float32ArraysAreRounded) {
  const Value v = Value::make_float_array(ValueType::FLOAT32, {0.1});
  EXPECT_EQ(v.floats[0], static_cast<double>(0.1f));
}

TEST(Value, DisplayScalars) {
  EXPECT_EQ(Value::make_u32(42).to_display(), "42");
  EXPECT_EQ(Value::make_i32(-42).to_display(), "-42");
  EXPECT_EQ(Value::make_u64(18446744073709551615ull).to_display(), "18446744073709551615");
  EXPECT_EQ(Value::make_bool(true).to_display(), "True");
  EXPECT_EQ(Value::make_bool(false).to_display(), "False");
  EXPECT_EQ(Value::make_f32(9.9999997e-06f).to_display(), "1e-05");
  EXPECT_EQ(Value::make_f32(10000.0f).to_display(), "10000.0");
  EXPECT_EQ(Value::make_f32(0.1f).to_display(), "0.1");
  EXPECT_EQ(Value::make_f64(0.1).to_display(), "0.1");
  EXPECT_EQ(Value::make_f64(-2.0).to_display(), "-2.0");
  EXPECT_EQ(Value::make_f64(std::numeric_limits<double>::infinity()).to_display(), "inf");
  EXPECT_EQ(Value::make_f64(std::nan("")).to_display(), "nan");
}

TEST(Value, DisplayStrings) {
  EXPECT_EQ(Value::make_string("llama").to_display(), "\"llama\"");
  EXPECT_EQ(Value::make_string("a\"b\\c\nd\te\r").to_display(), "\"a\\\"b\\\\c\\nd\\te\\r\"");
  EXPECT_EQ(Value::make_string(std::string("\x01\x7f", 2)).to_display(), "\"\\x01\\x7f\"");
  EXPECT_EQ(Value::make_string(std::string("a\0b", 3)).to_display(), "\"a\\x00b\"");
  EXPECT_EQ(Value::make_string("\xe2\x96\x81Once").to_display(), "\"\xe2\x96\x81Once\"");
  EXPECT_EQ(Value::make_string("\xff\xe2\x96").to_display(), "\"\\xff\\xe2\\x96\"");
  const std::string longs(100, 'x');
  EXPECT_EQ(Value::make_string(longs).to_display(),
            "\"" + std::string(60, 'x') + "\"... (100 bytes)");
  // A cut never splits a UTF-8 sequence.
  std::string utf(59, 'y');
  utf += "\xe2\x96\x81zzzz";
  EXPECT_EQ(display_string(utf), "\"" + std::string(59, 'y') + "\xe2\x96\x81\"... (66 bytes)");
  EXPECT_EQ(display_string("it's", '\''), "'it\\'s'");
}

TEST(Value, DisplayArrays) {
  std::vector<int64_t> ids(512);
  for (size_t k = 0; k < ids.size(); ++k) ids[k] = static_cast<int64_t>(k + 1);
  const Value a = Value::make_int_array(ValueType::INT32, ids);
  EXPECT_EQ(a.to_display(3), "[1, 2, 3, ... (512 items)]");
  EXPECT_EQ(a.to_display(0), "[... (512 items)]");
  EXPECT_EQ(Value::make_int_array(ValueType::INT32, {1, 2}).to_display(), "[1, 2]");
  EXPECT_EQ(Value::make_int_array(ValueType::UINT8, {}).to_display(), "[]");
  EXPECT_EQ(Value::make_int_array(ValueType::BOOL, {1, 0}).to_display(), "[True, False]");
  EXPECT_EQ(Value::make_string_array({"<s>", "a\n"}).to_display(), "[\"<s>\", \"a\\n\"]");
  EXPECT_EQ(Value::make_float_array(ValueType::FLOAT32, {0.0, -1.0, 0.25}).to_display(),
            "[0.0, -1.0, 0.25]");
  EXPECT_EQ(Value::make_int_array(ValueType::UINT64, {-1}).to_display(), "[18446744073709551615]");
  const Value nested =
      Value::make_array_array({Value::make_int_array(ValueType::INT8, {1, 2}),
                               Value::make_array_array({}), Value::make_string_array({"x"})});
  EXPECT_EQ(nested.to_display(), "[[1, 2], [], [\"x\"]]");
  EXPECT_EQ(nested.to_display(1), "[[1, ... (2 items)], ... (3 items)]");
}

TEST(Value, Equality) {
  EXPECT_EQ(Value::make_u32(1), Value::make_u32(1));
  EXPECT_NE(Value::make_u32(1), Value::make_i32(1));
  EXPECT_NE(Value::make_u32(1), Value::make_u32(2));
  EXPECT_EQ(Value::make_f64(std::nan("")), Value::make_f64(std::nan("")));
  EXPECT_NE(Value::make_f64(0.0), Value::make_f64(-0.0));
  EXPECT_NE(Value::make_f32(1.0f), Value::make_f64(1.0));
  EXPECT_EQ(Value::make_string("a"), Value::make_string("a"));
  EXPECT_NE(Value::make_string("a"), Value::make_string("b"));
  EXPECT_EQ(Value::make_string_array({"a"}), Value::make_string_array({"a"}));
  EXPECT_NE(Value::make_string_array({"a"}), Value::make_string_array({"a", "b"}));
  EXPECT_NE(Value::make_int_array(ValueType::INT32, {}),
            Value::make_int_array(ValueType::UINT32, {}));
  EXPECT_NE(Value::make_float_array(ValueType::FLOAT64, {0.0}),
            Value::make_float_array(ValueType::FLOAT64, {-0.0}));
  const Value n1 = Value::make_array_array({Value::make_int_array(ValueType::INT8, {1})});
  const Value n2 = Value::make_array_array({Value::make_int_array(ValueType::INT8, {2})});
  EXPECT_EQ(n1, n1);
  EXPECT_NE(n1, n2);
  // Fields the type does not use are ignored.
  Value x = Value::make_u32(5);
  x.str = "ignored";
  EXPECT_EQ(x, Value::make_u32(5));
}

}  // namespace
}  // namespace hearth::gguf
