#include "gguf/writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <utility>

#include "util/error.h"

namespace hearth::gguf {

static_assert(std::endian::native == std::endian::little,
              "the GGUF writer encodes little-endian fields with memcpy");

namespace {

constexpr uint32_t kWriteVersion = 3;

std::string quoted(std::string_view s) {
  return display_string(s, '\'', 80);
}

uint64_t align_up(uint64_t x, uint64_t a) {
  return (x + a - 1) / a * a;
}

bool valid_alignment(uint64_t a) {
  return a >= 1 && a <= kMaxAlignment && (a & (a - 1)) == 0;
}

// Appends little-endian fields to a byte vector.
class Out {
 public:
  explicit Out(std::vector<uint8_t>& b) : b_(b) {}
  template <typename T>
  void put(T v) {
    const size_t at = b_.size();
    b_.resize(at + sizeof v);
    std::memcpy(b_.data() + at, &v, sizeof v);
  }
  void str(std::string_view s) {
    put<uint64_t>(s.size());
    b_.insert(b_.end(), s.begin(), s.end());
  }

 private:
  std::vector<uint8_t>& b_;
};

void put_int(Out& o, ValueType t, int64_t v) {
  switch (t) {
    case ValueType::UINT8:
      o.put(static_cast<uint8_t>(v));
      break;
    case ValueType::INT8:
      o.put(static_cast<int8_t>(v));
      break;
    case ValueType::UINT16:
      o.put(static_cast<uint16_t>(v));
      break;
    case ValueType::INT16:
      o.put(static_cast<int16_t>(v));
      break;
    case ValueType::UINT32:
      o.put(static_cast<uint32_t>(v));
      break;
    case ValueType::INT32:
      o.put(static_cast<int32_t>(v));
      break;
    case ValueType::UINT64:
      o.put(static_cast<uint64_t>(v));
      break;
    case ValueType::INT64:
      o.put(v);
      break;
    case ValueType::BOOL:
      o.put(static_cast<uint8_t>(v != 0));
      break;
    default:
      break;  // rejected by check_value
  }
}

void put_float(Out& o, ValueType t, double v) {
  if (t == ValueType::FLOAT32) {
    o.put(static_cast<float>(v));
  } else {
    o.put(v);
  }
}

void put_array(Out& o, const Value& v);

void put_value(Out& o, const Value& v) {
  if (v.type == ValueType::STRING) {
    o.str(v.str);
  } else if (v.type == ValueType::ARRAY) {
    put_array(o, v);
  } else if (is_float_type(v.type)) {
    put_float(o, v.type, v.f);
  } else {
    put_int(o, v.type, v.i);
  }
}

void put_array(Out& o, const Value& v) {
  o.put(static_cast<uint32_t>(v.elem_type));
  o.put<uint64_t>(v.array_size());
  if (v.elem_type == ValueType::STRING) {
    for (const std::string& s : v.strings) o.str(s);
  } else if (v.elem_type == ValueType::ARRAY) {
    for (const Value& sub : v.values) put_array(o, sub);
  } else if (is_float_type(v.elem_type)) {
    for (double x : v.floats) put_float(o, v.elem_type, x);
  } else {
    for (int64_t x : v.ints) put_int(o, v.elem_type, x);
  }
}

[[noreturn]] void bad_value(const std::string& key, std::string_view problem) {
  fail("gguf writer: key {}: {}", quoted(key), problem);
}

void check_int(const std::string& key, ValueType t, int64_t v) {
  try {
    (void)Value::make_int(t, v);
  } catch (const Error& e) {
    bad_value(key, e.what());
  }
}

// `depth` = number of arrays enclosing `v`.
void check_value(const std::string& key, const Value& v, int depth) {
  if (!is_valid_value_type(static_cast<uint32_t>(v.type)))
    bad_value(key, fmt::format("unknown value type {}", static_cast<uint32_t>(v.type)));
  if (is_integer_type(v.type)) check_int(key, v.type, v.i);
  if (!v.is_array()) return;
  if (depth >= kMaxArrayDepth)
    bad_value(key, fmt::format("arrays nested more than {} deep", kMaxArrayDepth));
  if (!is_valid_value_type(static_cast<uint32_t>(v.elem_type)))
    bad_value(key,
              fmt::format("unknown array element type {}", static_cast<uint32_t>(v.elem_type)));
  if (is_integer_type(v.elem_type))
    for (int64_t x : v.ints) check_int(key, v.elem_type, x);
  if (v.elem_type == ValueType::ARRAY) {
    for (const Value& sub : v.values) {
      if (!sub.is_array())
        bad_value(key, fmt::format("an array of arrays holds a {}", value_type_name(sub.type)));
      check_value(key, sub, depth + 1);
    }
  }
}

// Writes everything or throws Error naming `path`.
class FileSink {
 public:
  FileSink(std::string path, std::string tmp) : path_(std::move(path)), tmp_(std::move(tmp)) {
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) fail("{}: cannot create {}: {}", path_, tmp_, std::strerror(errno));
  }
  ~FileSink() {
    if (fd_ >= 0) ::close(fd_);
    if (!done_) ::unlink(tmp_.c_str());
  }
  FileSink(const FileSink&) = delete;
  FileSink& operator=(const FileSink&) = delete;

  void write(const uint8_t* p, size_t n) {
    while (n > 0) {
      const ssize_t w = ::write(fd_, p, std::min<size_t>(n, size_t{1} << 30));
      if (w < 0) {
        if (errno == EINTR) continue;
        fail("{}: cannot write {}: {}", path_, tmp_, std::strerror(errno));
      }
      p += w;
      n -= static_cast<size_t>(w);
    }
  }
  void zeros(size_t n) {
    static constexpr uint8_t kZero[256] = {};
    while (n > 0) {
      const size_t k = std::min(n, sizeof kZero);
      write(kZero, k);
      n -= k;
    }
  }
  void commit() {
    if (::fsync(fd_) != 0) fail("{}: cannot sync {}: {}", path_, tmp_, std::strerror(errno));
    const int fd = std::exchange(fd_, -1);
    if (::close(fd) != 0) fail("{}: cannot close {}: {}", path_, tmp_, std::strerror(errno));
    if (std::rename(tmp_.c_str(), path_.c_str()) != 0)
      fail("{}: cannot rename {} to it: {}", path_, tmp_, std::strerror(errno));
    done_ = true;
  }

 private:
  std::string path_;
  std::string tmp_;
  int fd_ = -1;
  bool done_ = false;
};

}  // namespace

void Writer::set(const std::string& key, Value value) {
  if (key.empty()) fail("gguf writer: empty metadata key");
  check_value(key, value, 0);
  if (key == "general.alignment") {
    if (value.type != ValueType::UINT32)
      bad_value(key, fmt::format("must be u32, not {}", value_type_name(value.type)));
    if (!valid_alignment(static_cast<uint64_t>(value.i)))
      bad_value(key, fmt::format("{} is not a power of two from 1 to {}", value.i, kMaxAlignment));
    alignment_ = static_cast<uint32_t>(value.i);
  }
  for (KeyValue& kv : kvs_) {
    if (kv.key == key) {
      kv.value = std::move(value);
      return;
    }
  }
  kvs_.push_back(KeyValue{key, std::move(value)});
}

bool Writer::remove(const std::string& key) {
  const auto it =
      std::find_if(kvs_.begin(), kvs_.end(), [&](const KeyValue& kv) { return kv.key == key; });
  if (it == kvs_.end()) return false;
  kvs_.erase(it);
  if (key == "general.alignment") alignment_ = kDefaultAlignment;
  return true;
}

const Value* Writer::find(const std::string& key) const {
  for (const KeyValue& kv : kvs_)
    if (kv.key == key) return &kv.value;
  return nullptr;
}

void Writer::set_alignment(uint32_t alignment) {
  if (!valid_alignment(alignment))
    fail("gguf writer: alignment {} is not a power of two from 1 to {}", alignment, kMaxAlignment);
  set("general.alignment", Value::make_u32(alignment));
}

uint64_t Writer::check_tensor(const std::string& name, TensorType type,
                              const std::vector<int64_t>& ne) const {
  if (name.empty()) fail("gguf writer: empty tensor name");
  if (name.size() > kMaxTensorName)
    fail("gguf writer: tensor name {} is {} bytes long; the limit is {}", quoted(name), name.size(),
         kMaxTensorName);
  for (const Pending& t : tensors_)
    if (t.name == name) fail("gguf writer: duplicate tensor {}", quoted(name));
  const auto tr = type_traits(static_cast<uint32_t>(type));
  if (!tr)
    fail("gguf writer: tensor {} has unknown type id {}", quoted(name),
         static_cast<uint32_t>(type));
  if (ne.empty() || ne.size() > static_cast<size_t>(kMaxDims))
    fail("gguf writer: tensor {} has {} dimensions (must be 1 to {})", quoted(name), ne.size(),
         kMaxDims);
  uint64_t elems = 1;
  for (int64_t d : ne) {
    if (d < 0) fail("gguf writer: tensor {} has a negative dimension {}", quoted(name), d);
    if (d == 0) continue;
    if (__builtin_mul_overflow(elems, static_cast<uint64_t>(d), &elems) ||
        elems > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      fail("gguf writer: tensor {} has too many elements", quoted(name));
  }
  if (ne[0] % tr->block_elems != 0)
    fail("gguf writer: tensor {} of type {} has ne[0] = {}, not a multiple of the block size {}",
         quoted(name), tr->name, ne[0], tr->block_elems);
  uint64_t rows = 1;
  for (size_t d = 1; d < ne.size(); ++d) rows *= static_cast<uint64_t>(ne[d]);  // checked above
  uint64_t nbytes = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(ne[0]) / tr->block_elems,
                             uint64_t{tr->block_bytes}, &nbytes) ||
      __builtin_mul_overflow(nbytes, rows, &nbytes) ||
      nbytes > std::numeric_limits<uint64_t>::max() / 2)
    fail("gguf writer: tensor {} is too large", quoted(name));
  return nbytes;
}

void Writer::add_tensor(const std::string& name, TensorType type, std::vector<int64_t> ne,
                        std::vector<uint8_t> bytes) {
  const uint64_t nbytes = check_tensor(name, type, ne);
  if (bytes.size() != nbytes)
    fail("gguf writer: tensor {} of type {} and shape {} needs {} bytes, got {}", quoted(name),
         type_name(type), fmt::join(ne, "x"), nbytes, bytes.size());
  tensors_.push_back(Pending{name, type, std::move(ne), nbytes, std::move(bytes), nullptr});
}

void Writer::add_tensor(const std::string& name, TensorType type, std::vector<int64_t> ne,
                        Fill fill) {
  const uint64_t nbytes = check_tensor(name, type, ne);
  if (!fill) fail("gguf writer: tensor {} has no fill function", quoted(name));
  tensors_.push_back(Pending{name, type, std::move(ne), nbytes, {}, std::move(fill)});
}

std::vector<uint8_t> Writer::header(std::vector<uint64_t>* offsets, uint64_t* total) const {
  std::vector<uint8_t> buf;
  Out o(buf);
  o.put(kMagic);
  o.put(kWriteVersion);
  o.put<uint64_t>(tensors_.size());
  o.put<uint64_t>(kvs_.size());
  for (const KeyValue& kv : kvs_) {
    o.str(kv.key);
    o.put(static_cast<uint32_t>(kv.value.type));
    put_value(o, kv.value);
  }
  offsets->clear();
  uint64_t off = 0;
  for (const Pending& t : tensors_) {
    o.str(t.name);
    o.put(static_cast<uint32_t>(t.ne.size()));
    for (int64_t d : t.ne) o.put(d);
    o.put(static_cast<uint32_t>(t.type));
    o.put(off);
    offsets->push_back(off);
    off += align_up(t.nbytes, alignment_);
  }
  // Like llama.cpp and gguf-py, pad the header to the alignment even without tensors.
  buf.resize(align_up(buf.size(), alignment_), 0);
  *total = buf.size() + off;
  return buf;
}

uint64_t Writer::file_size() const {
  std::vector<uint64_t> offsets;
  uint64_t total = 0;
  (void)header(&offsets, &total);
  return total;
}

std::vector<uint8_t> Writer::to_bytes() const {
  std::vector<uint64_t> offsets;
  uint64_t total = 0;
  std::vector<uint8_t> out = header(&offsets, &total);
  if (total > out.max_size()) fail("gguf writer: image of {} bytes does not fit in memory", total);
  const size_t data_offset = out.size();
  out.resize(static_cast<size_t>(total), 0);
  for (size_t k = 0; k < tensors_.size(); ++k) {
    const Pending& t = tensors_[k];
    uint8_t* dst = out.data() + data_offset + offsets[k];
    if (t.fill) {
      t.fill(dst, static_cast<size_t>(t.nbytes));
    } else if (t.nbytes > 0) {
      std::memcpy(dst, t.bytes.data(), t.bytes.size());
    }
  }
  return out;
}

void Writer::write(const std::string& path) const {
  std::vector<uint64_t> offsets;
  uint64_t total = 0;
  const std::vector<uint8_t> head = header(&offsets, &total);
  FileSink sink(path, path + ".tmp");
  sink.write(head.data(), head.size());
  std::vector<uint8_t> scratch;  // one lazy tensor at a time
  for (const Pending& t : tensors_) {
    const auto n = static_cast<size_t>(t.nbytes);
    if (t.fill) {
      scratch.assign(n, 0);
      t.fill(scratch.data(), n);
      sink.write(scratch.data(), n);
    } else {
      sink.write(t.bytes.data(), n);
    }
    sink.zeros(static_cast<size_t>(align_up(t.nbytes, alignment_) - t.nbytes));
  }
  sink.commit();
}

}  // namespace hearth::gguf
