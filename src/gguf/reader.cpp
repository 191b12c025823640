#include "gguf/reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <string_view>
#include <utility>

#include "util/error.h"

namespace hearth::gguf {

static_assert(std::endian::native == std::endian::little,
              "the GGUF reader decodes little-endian fields with memcpy");

namespace {

// Minimal encoded sizes, used to reject counts that the remaining bytes cannot hold before
// anything is reserved.
// A KV: key length, value type, a u8 value.
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;
// A tensor info: name length, n_dims, one ne, type, offset.
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;
// A nested array: element type, count.
constexpr uint64_t kMinArrayBytes = 4 + 8;

uint64_t min_encoded_size(ValueType t) {
  if (t == ValueType::STRING) return 8;
  if (t == ValueType::ARRAY) return kMinArrayBytes;
  return scalar_size(t);
}

// Keys and tensor names in messages: single-quoted, escaped, cut when long.
std::string quoted(std::string_view s) {
  return display_string(s, '\'', 80);
}

std::string type_label(uint32_t t) {
  if (is_valid_value_type(t)) return std::string(value_type_name(static_cast<ValueType>(t)));
  return fmt::format("unknown type {}", t);
}

}  // namespace

// Decodes one image into a File. Every read goes through take(), which throws instead of
// reading past the end; error messages describe the field being read (built only on failure).
class Parser {
 public:
  Parser(const uint8_t* bytes, size_t size, std::string name, File& out)
      : p_(bytes), n_(size), name_(std::move(name)), f_(out) {}

  void run() {
    f_.name_ = name_;
    f_.size_ = n_;
    f_.base_ = p_;
    read_header();
    read_metadata();
    read_alignment();
    read_tensor_infos();
    place_tensors();
  }

 private:
  enum class Field {
    Magic,
    Version,
    TensorCount,
    KvCount,
    Key,
    ValueType,
    Value,
    TensorName,
    NDims,
    Shape,
    TensorType,
    TensorOffset
  };

  [[noreturn]] void error(std::string_view problem) const {
    throw Error(fmt::format("{}: {}", name_, problem));
  }

  std::string subject() const { return quoted(subject_); }

  // "the value of key 'x' (array element 3)" and the like, for the field being read.
  std::string describe() const {
    switch (field_) {
      case Field::Magic:
        return "the magic";
      case Field::Version:
        return "the version";
      case Field::TensorCount:
        return "the tensor count";
      case Field::KvCount:
        return "the metadata key/value count";
      case Field::Key:
        return fmt::format("the key of metadata entry {}", item_);
      case Field::ValueType:
        return fmt::format("the value type of key {}", subject());
      case Field::Value: {
        std::string s = fmt::format("the value of key {}", subject());
        if (depth_ > 0) {
          s += " (array element ";
          for (int d = 0; d < depth_; ++d)
            s += fmt::format("{}{}", d > 0 ? ", element " : "", path_[static_cast<size_t>(d)]);
          s += ")";
        }
        return s;
      }
      case Field::TensorName:
        return fmt::format("the name of tensor info {}", item_);
      case Field::NDims:
        return fmt::format("the dimension count of tensor {}", subject());
      case Field::Shape:
        return fmt::format("the shape of tensor {}", subject());
      case Field::TensorType:
        return fmt::format("the type of tensor {}", subject());
      case Field::TensorOffset:
        return fmt::format("the data offset of tensor {}", subject());
    }
    return "the file";
  }

  size_t remaining() const { return n_ - pos_; }

  const uint8_t* take(size_t n) {
    if (n > remaining())
      error(fmt::format("truncated while reading {} at offset {}: need {} bytes, {} remain",
                        describe(), pos_, n, remaining()));
    const uint8_t* r = p_ + pos_;
    pos_ += n;
    return r;
  }

  template <typename T>
  T read() {
    T v;
    std::memcpy(&v, take(sizeof v), sizeof v);
    return v;
  }

  std::string_view read_string() {
    const size_t at = pos_;
    const auto len = read<uint64_t>();
    if (len > remaining())
      error(fmt::format(
          "truncated while reading {} at offset {}: string length {} exceeds the {} bytes that "
          "remain",
          describe(), at, len, remaining()));
    const auto n = static_cast<size_t>(len);
    return {reinterpret_cast<const char*>(take(n)), n};
  }

  // Throws unless `count` items of at least `each` bytes fit in the remaining bytes.
  void check_count(uint64_t count, uint64_t each, size_t at, std::string_view what,
                   std::string_view noun) const {
    if (count > remaining() / each)
      error(
          fmt::format("{} at offset {} claims {} {} but only {} bytes remain (each needs at "
                      "least {})",
                      what, at, count, noun, remaining(), each));
  }

  void read_header() {
    field_ = Field::Magic;
    if (n_ < 4) error(fmt::format("not a GGUF file: only {} bytes long", n_));
    const auto magic = read<uint32_t>();
    if (magic != kMagic)
      error(fmt::format("not a GGUF file: bad magic {} at offset 0 (expected \"GGUF\")",
                        display_string({reinterpret_cast<const char*>(p_), 4})));
    field_ = Field::Version;
    const auto version = read<uint32_t>();
    if (version == 1)
      error(
          "GGUF version 1 is not supported (it predates 64-bit counts); only versions 2 and 3 "
          "are");
    if (version != 2 && version != 3) {
      const uint32_t swapped = ((version & 0xFFu) << 24) | ((version & 0xFF00u) << 8) |
                               ((version >> 8) & 0xFF00u) | (version >> 24);
      if (swapped == 2 || swapped == 3)
        error(
            fmt::format("big-endian GGUF (version {}) is not supported; only little-endian files "
                        "are",
                        swapped));
      error(
          fmt::format("unsupported GGUF version {} at offset 4 (only versions 2 and 3 are "
                      "supported)",
                      version));
    }
    f_.version_ = version;

    field_ = Field::TensorCount;
    size_t at = pos_;
    n_tensors_ = read<uint64_t>();
    field_ = Field::KvCount;
    const size_t kv_at = pos_;
    n_kv_ = read<uint64_t>();
    check_count(n_tensors_, kMinTensorInfoBytes, at, "the header", "tensors");
    check_count(n_kv_, kMinKvBytes, kv_at, "the header", "metadata entries");
    // Both tables must fit together (neither product can overflow after the checks above).
    if (n_tensors_ * kMinTensorInfoBytes + n_kv_ * kMinKvBytes > remaining())
      error(fmt::format("header claims {} tensors and {} metadata entries but only {} bytes remain",
                        n_tensors_, n_kv_, remaining()));
  }

  void read_metadata() {
    f_.kvs_.reserve(static_cast<size_t>(n_kv_));
    for (uint64_t k = 0; k < n_kv_; ++k) {
      field_ = Field::Key;
      item_ = k;
      const size_t at = pos_;
      const std::string_view key = read_string();
      if (key.empty()) error(fmt::format("metadata entry {} at offset {} has an empty key", k, at));
      subject_ = key;
      if (f_.kv_index_.find(key) != f_.kv_index_.end())
        error(fmt::format("duplicate key {} at offset {}", subject(), at));

      field_ = Field::ValueType;
      const size_t type_at = pos_;
      const auto type = read<uint32_t>();
      if (!is_valid_value_type(type))
        error(
            fmt::format("key {} has unknown value type {} at offset {}", subject(), type, type_at));
      field_ = Field::Value;
      depth_ = 0;
      Value value = read_value(static_cast<ValueType>(type), 0);

      f_.kv_index_.emplace(std::string(key), f_.kvs_.size());
      f_.kvs_.push_back(KeyValue{std::string(key), std::move(value)});
    }
  }

  int64_t read_int_scalar(ValueType t) {
    switch (t) {
      case ValueType::UINT8:
        return read<uint8_t>();
      case ValueType::INT8:
        return read<int8_t>();
      case ValueType::UINT16:
        return read<uint16_t>();
      case ValueType::INT16:
        return read<int16_t>();
      case ValueType::UINT32:
        return read<uint32_t>();
      case ValueType::INT32:
        return read<int32_t>();
      case ValueType::UINT64:
        return static_cast<int64_t>(read<uint64_t>());
      case ValueType::INT64:
        return read<int64_t>();
      case ValueType::BOOL: {
        const size_t at = pos_;
        const auto b = read<uint8_t>();
        if (b > 1)
          error(fmt::format("invalid bool {} in {} at offset {} (must be 0 or 1)", b, describe(),
                            at));
        return b;
      }
      default:
        break;
    }
    error(fmt::format("internal error: {} is not an integer type", value_type_name(t)));
  }

  double read_float_scalar(ValueType t) {
    if (t == ValueType::FLOAT32) return read<float>();
    return read<double>();
  }

  // `depth` = number of arrays enclosing this value.
  Value read_value(ValueType t, int depth) {
    Value v;
    v.type = t;
    if (t == ValueType::STRING) {
      v.str = std::string(read_string());
    } else if (t == ValueType::ARRAY) {
      read_array(v, depth);
    } else if (is_float_type(t)) {
      v.f = read_float_scalar(t);
    } else {
      v.i = read_int_scalar(t);
    }
    return v;
  }

  void read_array(Value& v, int depth) {
    if (depth >= kMaxArrayDepth)
      error(fmt::format("{} at offset {}: arrays nested more than {} deep", describe(), pos_,
                        kMaxArrayDepth));
    const size_t type_at = pos_;
    const auto et = read<uint32_t>();
    if (!is_valid_value_type(et))
      error(fmt::format("{} at offset {}: array of unknown element type {}", describe(), type_at,
                        et));
    const auto elem = static_cast<ValueType>(et);
    v.elem_type = elem;
    const size_t count_at = pos_;
    const auto count = read<uint64_t>();
    if (count > remaining() / min_encoded_size(elem))
      check_count(count, min_encoded_size(elem), count_at,
                  fmt::format("the array in {}", describe()),
                  fmt::format("{} elements", type_label(et)));
    const auto n = static_cast<size_t>(count);

    // Element k of this array is path_[depth]; describe() shows the path on errors.
    ++depth_;
    const auto slot = static_cast<size_t>(depth);
    if (elem == ValueType::STRING) {
      v.strings.reserve(n);
      for (size_t k = 0; k < n; ++k) {
        path_[slot] = k;
        v.strings.emplace_back(read_string());
      }
    } else if (elem == ValueType::ARRAY) {
      v.values.reserve(n);
      for (size_t k = 0; k < n; ++k) {
        path_[slot] = k;
        Value sub;
        sub.type = ValueType::ARRAY;
        read_array(sub, depth + 1);
        v.values.push_back(std::move(sub));
      }
    } else if (is_float_type(elem)) {
      v.floats.resize(n);
      for (size_t k = 0; k < n; ++k) {
        path_[slot] = k;
        v.floats[k] = read_float_scalar(elem);
      }
    } else {
      v.ints.resize(n);
      for (size_t k = 0; k < n; ++k) {
        path_[slot] = k;
        v.ints[k] = read_int_scalar(elem);
      }
    }
    --depth_;
  }

  void read_alignment() {
    const auto it = f_.kv_index_.find(std::string_view("general.alignment"));
    if (it == f_.kv_index_.end()) return;
    const Value& v = f_.kvs_[it->second].value;
    if (v.type != ValueType::UINT32)
      error(fmt::format("key 'general.alignment' has type {}; it must be u32",
                        value_type_name(v.type)));
    const auto a = static_cast<uint64_t>(v.i);
    if (a == 0 || a > kMaxAlignment || (a & (a - 1)) != 0)
      error(fmt::format("key 'general.alignment' is {}; it must be a power of two from 1 to {}", a,
                        kMaxAlignment));
    f_.alignment_ = static_cast<uint32_t>(a);
  }

  void read_tensor_infos() {
    f_.tensors_.reserve(static_cast<size_t>(n_tensors_));
    for (uint64_t k = 0; k < n_tensors_; ++k) {
      TensorInfo t;
      field_ = Field::TensorName;
      item_ = k;
      const size_t at = pos_;
      const std::string_view name = read_string();
      if (name.empty()) error(fmt::format("tensor info {} at offset {} has an empty name", k, at));
      subject_ = name;
      if (f_.tensor_index_.find(name) != f_.tensor_index_.end())
        error(fmt::format("duplicate tensor name {} at offset {}", subject(), at));

      field_ = Field::NDims;
      const size_t dims_at = pos_;
      const auto n_dims = read<uint32_t>();
      if (n_dims < 1 || n_dims > static_cast<uint32_t>(kMaxDims))
        error(fmt::format("tensor {} has {} dimensions at offset {} (must be 1 to {})", subject(),
                          n_dims, dims_at, kMaxDims));
      t.n_dims = static_cast<int>(n_dims);

      field_ = Field::Shape;
      for (uint32_t d = 0; d < n_dims; ++d) {
        const size_t ne_at = pos_;
        const auto ne = read<int64_t>();
        if (ne < 0)
          error(fmt::format("tensor {} has a negative dimension ne[{}] = {} at offset {}",
                            subject(), d, ne, ne_at));
        t.ne[d] = ne;
      }

      field_ = Field::TensorType;
      const size_t type_at = pos_;
      const auto type_id = read<uint32_t>();
      const auto tr = type_traits(type_id);
      if (!tr)
        error(fmt::format("tensor {} has unknown type id {} at offset {}", subject(), type_id,
                          type_at));
      t.type = tr->type;

      // Sizes: the product of the non-zero dims must fit in int64 (then every partial product
      // that n_elements()/n_rows() compute does), the byte count in uint64.
      uint64_t elems = 1;
      for (int d = 0; d < kMaxDims; ++d) {
        const auto ne = static_cast<uint64_t>(t.ne[static_cast<size_t>(d)]);
        if (ne == 0) continue;
        if (__builtin_mul_overflow(elems, ne, &elems) ||
            elems > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
          error(
              fmt::format("tensor {} shape {} has too many elements", subject(), t.shape_string()));
      }
      if (t.ne[0] % tr->block_elems != 0)
        error(
            fmt::format("tensor {} of type {} has ne[0] = {}, which is not a multiple of the "
                        "block size {}",
                        subject(), tr->name, t.ne[0], tr->block_elems));
      uint64_t row = 0;
      if (__builtin_mul_overflow(static_cast<uint64_t>(t.ne[0]) / tr->block_elems,
                                 uint64_t{tr->block_bytes}, &row) ||
          __builtin_mul_overflow(row, static_cast<uint64_t>(t.n_rows()), &t.nbytes))
        error(fmt::format("tensor {} shape {} is too large", subject(), t.shape_string()));

      field_ = Field::TensorOffset;
      const size_t off_at = pos_;
      t.offset = read<uint64_t>();
      if (t.offset % f_.alignment_ != 0)
        error(
            fmt::format("tensor {} data offset {} (at offset {}) is not a multiple of the "
                        "alignment {}",
                        subject(), t.offset, off_at, f_.alignment_));

      t.name = std::string(name);
      f_.tensor_index_.emplace(t.name, f_.tensors_.size());
      f_.tensors_.push_back(std::move(t));
    }
  }

  void place_tensors() {
    const uint64_t header_end = pos_;
    const uint64_t a = f_.alignment_;
    f_.data_offset_ = (header_end + a - 1) / a * a;  // header_end <= size, no overflow
    if (f_.tensors_.empty()) return;
    if (f_.data_offset_ > n_)
      error(
          fmt::format("the data section would start at offset {}, past the end of the file ({} "
                      "bytes)",
                      f_.data_offset_, n_));
    const uint64_t room = n_ - f_.data_offset_;
    for (TensorInfo& t : f_.tensors_) {
      if (t.offset > room || t.nbytes > room - t.offset)
        error(
            fmt::format("tensor {} data (offset {} + {} bytes, from data section start {}) "
                        "extends past the end of the file ({} bytes)",
                        quoted(t.name), t.offset, t.nbytes, f_.data_offset_, n_));
      t.data = p_ + f_.data_offset_ + t.offset;
    }
    // No two non-empty tensors may share bytes.
    std::vector<const TensorInfo*> order;
    order.reserve(f_.tensors_.size());
    for (const TensorInfo& t : f_.tensors_)
      if (t.nbytes > 0) order.push_back(&t);
    std::sort(order.begin(), order.end(),
              [](const TensorInfo* x, const TensorInfo* y) { return x->offset < y->offset; });
    for (size_t k = 1; k < order.size(); ++k) {
      const TensorInfo& prev = *order[k - 1];
      const TensorInfo& next = *order[k];
      if (prev.offset + prev.nbytes > next.offset)
        error(fmt::format("tensors {} (offset {}, {} bytes) and {} (offset {}) overlap",
                          quoted(prev.name), prev.offset, prev.nbytes, quoted(next.name),
                          next.offset));
    }
  }

  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
  std::string name_;
  File& f_;
  uint64_t n_tensors_ = 0;
  uint64_t n_kv_ = 0;

  // What is being read, for error messages.
  Field field_ = Field::Magic;
  uint64_t item_ = 0;
  std::string_view subject_;  // key or tensor name, pointing into the image
  int depth_ = 0;             // array nesting of the element being read
  std::array<uint64_t, kMaxArrayDepth> path_{};
};

std::string TensorInfo::shape_string() const {
  std::string s = "[";
  for (int d = 0; d < n_dims && d < kMaxDims; ++d)
    s += fmt::format("{}{}", d > 0 ? ", " : "", ne[static_cast<size_t>(d)]);
  return s + "]";
}

File File::open(const std::string& path) {
  auto map = std::make_shared<MappedFile>(path);
  File f = parse(map->data(), map->size(), path);
  f.map_ = std::move(map);
  return f;
}

File File::parse(const uint8_t* bytes, size_t size, const std::string& name) {
  File f;
  Parser(bytes, size, name, f).run();
  return f;
}

const Value* File::find(const std::string& key) const {
  const auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kvs_[it->second].value;
}

const TensorInfo* File::find_tensor(const std::string& name) const {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

namespace {

[[noreturn]] void wrong_type(const std::string& file, const std::string& key, const Value& v,
                             std::string_view expected) {
  fail("{}: key {} has type {}, expected {}", file, quoted(key), value_type_name(v.type), expected);
}

}  // namespace

std::optional<int64_t> File::get_int(const std::string& key) const {
  const Value* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (!is_integer_type(v->type)) wrong_type(name_, key, *v, "an integer");
  if (v->type == ValueType::UINT64 && v->i < 0)
    fail("{}: key {} = {} (u64) does not fit in a signed 64-bit integer", name_, quoted(key),
         static_cast<uint64_t>(v->i));
  return v->i;
}

std::optional<double> File::get_float(const std::string& key) const {
  const Value* v = find(key);
  if (v == nullptr) return std::nullopt;
  const auto f = v->as_float();
  if (!f) wrong_type(name_, key, *v, "a number");
  return f;
}

std::optional<bool> File::get_bool(const std::string& key) const {
  const Value* v = find(key);
  if (v == nullptr) return std::nullopt;
  const auto b = v->as_bool();
  if (!b) wrong_type(name_, key, *v, "a bool");
  return b;
}

std::optional<std::string> File::get_string(const std::string& key) const {
  const Value* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (v->type != ValueType::STRING) wrong_type(name_, key, *v, "a string");
  return v->str;
}

const Value* File::get_array(const std::string& key) const {
  const Value* v = find(key);
  if (v == nullptr) return nullptr;
  if (!v->is_array()) wrong_type(name_, key, *v, "an array");
  return v;
}

}  // namespace hearth::gguf
