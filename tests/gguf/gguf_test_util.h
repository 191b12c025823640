// Helpers shared by the GGUF tests: a raw byte builder for hand-made (possibly hostile) images,
// a writer-made sample model, and a walker that finds the count/length/type fields of a valid
// image (for targeted mutations).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/reader.h"
#include "gguf/value.h"
#include "gguf/writer.h"
#include "util/error.h"

namespace hearth::gguf::test {

using Bytes = std::vector<uint8_t>;

// Little-endian byte builder for hand-made images.
class Raw {
 public:
  Raw& u8(uint8_t v) { return put(v); }
  Raw& u32(uint32_t v) { return put(v); }
  Raw& u64(uint64_t v) { return put(v); }
  Raw& i64(int64_t v) { return put(v); }
  Raw& f32(float v) { return put(v); }
  Raw& str(std::string_view s) {
    u64(s.size());
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  Raw& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    return u32(kMagic).u32(version).u64(n_tensors).u64(n_kv);
  }
  Raw& kv_type(std::string_view key, ValueType t) { return str(key).u32(static_cast<uint32_t>(t)); }
  Raw& kv_u32(std::string_view key, uint32_t v) { return kv_type(key, ValueType::UINT32).u32(v); }
  Raw& kv_str(std::string_view key, std::string_view v) {
    return kv_type(key, ValueType::STRING).str(v);
  }
  // Tensor info with explicit dims.
  Raw& tensor(std::string_view name, const std::vector<int64_t>& ne, uint32_t type,
              uint64_t offset) {
    str(name).u32(static_cast<uint32_t>(ne.size()));
    for (int64_t d : ne) i64(d);
    return u32(type).u64(offset);
  }
  Raw& pad_to(size_t align) {
    while (b.size() % align != 0) b.push_back(0);
    return *this;
  }
  Raw& zeros(size_t n) {
    b.insert(b.end(), n, 0);
    return *this;
  }
  template <typename T>
  Raw& put(T v) {
    const size_t at = b.size();
    b.resize(at + sizeof v);
    std::memcpy(b.data() + at, &v, sizeof v);
    return *this;
  }

  Bytes b;
};

// Whole file as bytes (one read call: fast in unoptimized sanitizer builds too).
inline Bytes read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return {};
  Bytes b(static_cast<size_t>(in.tellg()));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(b.data()), static_cast<std::streamsize>(b.size()));
  return b;
}

inline File parse_bytes(const Bytes& b, const std::string& name = "test.gguf") {
  return File::parse(b.data(), b.size(), name);
}

// The Error message of parsing `b` as `name`, or "" when it parses.
inline std::string parse_error(const Bytes& b, const std::string& name = "bad.gguf") {
  try {
    (void)parse_bytes(b, name);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Asserts that parsing fails with "<name>: ..." containing `needle`.
#define EXPECT_PARSE_ERROR(bytes, needle)                                          \
  do {                                                                             \
    const std::string msg_ = ::hearth::gguf::test::parse_error(bytes, "bad.gguf"); \
    EXPECT_FALSE(msg_.empty()) << "expected an error containing: " << (needle);    \
    EXPECT_EQ(msg_.rfind("bad.gguf: ", 0), 0u) << msg_;                            \
    EXPECT_NE(msg_.find(needle), std::string::npos) << "message: " << msg_;        \
  } while (0)

inline void set_f32(uint8_t* p, float v) {
  std::memcpy(p, &v, sizeof v);
}

// A small model using every value type (nested and empty arrays included) and several tensor
// types, eager and lazy.
inline Writer sample_writer() {
  Writer w;
  w.set("general.architecture", Value::make_string("llama"));
  w.set("general.name", Value::make_string("sample \"model\"\n"));
  w.set("sample.u8", Value::make_int(ValueType::UINT8, 255));
  w.set("sample.i8", Value::make_int(ValueType::INT8, -128));
  w.set("sample.u16", Value::make_int(ValueType::UINT16, 65535));
  w.set("sample.i16", Value::make_int(ValueType::INT16, -32768));
  w.set("sample.u32", Value::make_u32(4294967295u));
  w.set("sample.i32", Value::make_i32(-2147483647 - 1));
  w.set("sample.u64", Value::make_u64(18446744073709551615ull));
  w.set("sample.i64", Value::make_int(ValueType::INT64, -9223372036854775807ll - 1));
  w.set("sample.f32", Value::make_f32(1e-5f));
  w.set("sample.f64", Value::make_f64(-2.5e300));
  w.set("sample.bool", Value::make_bool(true));
  w.set("sample.empty_string", Value::make_string(""));
  w.set("tokenizer.ggml.tokens", Value::make_string_array({"<unk>", "<s>", "</s>", "a", "b"}));
  w.set("tokenizer.ggml.scores",
        Value::make_float_array(ValueType::FLOAT32, {0.0, -1.0, -2.5, 3.25, 1e-3}));
  w.set("tokenizer.ggml.token_type", Value::make_int_array(ValueType::INT32, {2, 3, 3, 1, 1}));
  w.set("sample.bools", Value::make_int_array(ValueType::BOOL, {1, 0, 1}));
  w.set("sample.f64s", Value::make_float_array(ValueType::FLOAT64, {0.1, -0.0}));
  w.set("sample.empty_u8s", Value::make_int_array(ValueType::UINT8, {}));
  w.set("sample.nested",
        Value::make_array_array(
            {Value::make_int_array(ValueType::INT16, {1, -2}), Value::make_string_array({"x", ""}),
             Value::make_array_array({}),
             Value::make_array_array({Value::make_float_array(ValueType::FLOAT32, {1.5})})}));
  w.add_tensor("token_embd.weight", TensorType::F32, {4, 5}, Bytes(4 * 5 * 4, 0x3f));
  w.add_tensor("blk.0.attn_q.weight", TensorType::Q8_0, {32, 3}, [](uint8_t* dst, size_t n) {
    for (size_t k = 0; k < n; ++k) dst[k] = static_cast<uint8_t>(k * 7);
  });
  w.add_tensor("blk.0.ffn_down.weight", TensorType::Q4_K, {256, 1}, Bytes(144, 0x11));
  w.add_tensor("output_norm.weight", TensorType::F16, {3}, Bytes(6, 0x22));
  w.add_tensor("empty", TensorType::F32, {0, 7}, Bytes{});
  return w;
}

// Offsets of the fields of a valid image that targeted mutations overwrite.
struct Fields {
  std::vector<size_t> u64s;  // counts, string lengths, array counts, dims, tensor offsets
  std::vector<size_t> u32s;  // version, value types, element types, n_dims, tensor types
  size_t header_end = 0;     // end of the tensor infos
};

class FieldWalker {
 public:
  explicit FieldWalker(const Bytes& b) : b_(b) {}

  Fields walk() {
    pos_ = 4;
    f_.u32s.push_back(pos_);
    pos_ += 4;
    f_.u64s.push_back(pos_);
    const uint64_t n_tensors = u64();
    f_.u64s.push_back(pos_);
    const uint64_t n_kv = u64();
    for (uint64_t k = 0; k < n_kv; ++k) {
      string();
      f_.u32s.push_back(pos_);
      value(static_cast<ValueType>(u32()));
    }
    for (uint64_t k = 0; k < n_tensors; ++k) {
      string();
      f_.u32s.push_back(pos_);
      const uint32_t n_dims = u32();
      for (uint32_t d = 0; d < n_dims; ++d) {
        f_.u64s.push_back(pos_);
        pos_ += 8;
      }
      f_.u32s.push_back(pos_);
      pos_ += 4;
      f_.u64s.push_back(pos_);
      pos_ += 8;
    }
    f_.header_end = pos_;
    return f_;
  }

 private:
  uint64_t u64() {
    uint64_t v;
    std::memcpy(&v, b_.data() + pos_, 8);
    pos_ += 8;
    return v;
  }
  uint32_t u32() {
    uint32_t v;
    std::memcpy(&v, b_.data() + pos_, 4);
    pos_ += 4;
    return v;
  }
  void string() {
    f_.u64s.push_back(pos_);
    pos_ += u64();
  }
  void value(ValueType t) {
    if (t == ValueType::STRING) {
      string();
    } else if (t == ValueType::ARRAY) {
      f_.u32s.push_back(pos_);
      const auto et = static_cast<ValueType>(u32());
      f_.u64s.push_back(pos_);
      const uint64_t n = u64();
      if (et == ValueType::STRING || et == ValueType::ARRAY) {
        for (uint64_t k = 0; k < n; ++k) value(et);
      } else {
        pos_ += n * scalar_size(et);
      }
    } else {
      pos_ += scalar_size(t);
    }
  }

  const Bytes& b_;
  size_t pos_ = 0;
  Fields f_;
};

}  // namespace hearth::gguf::test
