// Writer -> File::parse round trips: every value type, nested and empty arrays, tensors of
// every type (eager and lazy), alignment, v2 images, files on disk, and add-time validation.
#include "gguf/writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "common/shared_data.h"
#include "gguf/reader.h"
#include "gguf_test_util.h"
#include "util/error.h"

namespace hearth::gguf {
namespace {

namespace fs = std::filesystem;
using test::Bytes;
using test::parse_bytes;

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_ERROR_CONTAINS(stmt, needle)                                     \
  do {                                                                          \
    const std::string m_ = error_of([&] { stmt; });                             \
    EXPECT_NE(m_.find(needle), std::string::npos) << "message: '" << m_ << "'"; \
  } while (0)

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("hearth_gguf_test_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

TEST(Writer, EveryValueTypeRoundTrips) {
  const Writer w = test::sample_writer();
  const Bytes bytes = w.to_bytes();
  const File f = parse_bytes(bytes);
  EXPECT_EQ(f.version(), 3u);
  ASSERT_EQ(f.metadata().size(), w.metadata().size());
  for (size_t k = 0; k < w.metadata().size(); ++k) {
    EXPECT_EQ(f.metadata()[k].key, w.metadata()[k].key);
    EXPECT_EQ(f.metadata()[k].value, w.metadata()[k].value) << w.metadata()[k].key;
  }
  EXPECT_EQ(f.get_int("sample.u8"), 255);
  EXPECT_EQ(f.get_int("sample.i8"), -128);
  EXPECT_EQ(f.get_int("sample.u16"), 65535);
  EXPECT_EQ(f.get_int("sample.i16"), -32768);
  EXPECT_EQ(f.get_int("sample.u32"), 4294967295);
  EXPECT_EQ(f.get_int("sample.i32"), -2147483648ll);
  EXPECT_EQ(f.find("sample.u64")->as_u64(), 18446744073709551615ull);
  EXPECT_EQ(f.get_int("sample.i64"), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(f.get_float("sample.f32"), static_cast<double>(1e-5f));
  EXPECT_EQ(f.get_float("sample.f64"), -2.5e300);
  EXPECT_EQ(f.get_bool("sample.bool"), true);
  EXPECT_EQ(f.get_string("sample.empty_string"), "");
  EXPECT_EQ(f.get_string("general.name"), "sample \"model\"\n");
  const Value* nested = f.get_array("sample.nested");
  ASSERT_NE(nested, nullptr);
  EXPECT_EQ(nested->to_display(), "[[1, -2], [\"x\", \"\"], [], [[1.5]]]");
  EXPECT_EQ(f.get_array("sample.empty_u8s")->array_size(), 0u);
  EXPECT_EQ(f.get_array("sample.empty_u8s")->elem_type, ValueType::UINT8);
  // get_int refuses a u64 that does not fit in int64, naming the key.
  EXPECT_ERROR_CONTAINS((void)f.get_int("sample.u64"), "test.gguf: key 'sample.u64'");
}

TEST(Writer, EmptyArraysOfEveryElementType) {
  Writer w;
  for (uint32_t t = 0; t <= 12; ++t) {
    const auto et = static_cast<ValueType>(t);
    Value v;
    v.type = ValueType::ARRAY;
    v.elem_type = et;
    w.set("empty." + std::string(value_type_name(et)), v);
  }
  const Bytes bytes = w.to_bytes();
  const File f = parse_bytes(bytes);
  ASSERT_EQ(f.metadata().size(), 13u);
  for (size_t k = 0; k < 13; ++k) {
    EXPECT_EQ(f.metadata()[k].value, w.metadata()[k].value);
    EXPECT_EQ(f.metadata()[k].value.elem_type, static_cast<ValueType>(k));
    EXPECT_EQ(f.metadata()[k].value.array_size(), 0u);
  }
}

TEST(Writer, ArraysOfEveryElementTypeWithBoundaryValues) {
  Writer w;
  w.set("u8", Value::make_int_array(ValueType::UINT8, {0, 1, 255}));
  w.set("i8", Value::make_int_array(ValueType::INT8, {-128, 0, 127}));
  w.set("u16", Value::make_int_array(ValueType::UINT16, {0, 65535}));
  w.set("i16", Value::make_int_array(ValueType::INT16, {-32768, 32767}));
  w.set("u32", Value::make_int_array(ValueType::UINT32, {0, 4294967295}));
  w.set("i32", Value::make_int_array(ValueType::INT32, {-2147483648ll, 2147483647}));
  w.set("u64", Value::make_int_array(ValueType::UINT64, {0, -1}));
  w.set("i64", Value::make_int_array(ValueType::INT64, {std::numeric_limits<int64_t>::min(),
                                                        std::numeric_limits<int64_t>::max()}));
  w.set("bool", Value::make_int_array(ValueType::BOOL, {0, 1}));
  w.set("f32", Value::make_float_array(ValueType::FLOAT32,
                                       {-0.0, std::numeric_limits<float>::infinity(),
                                        std::numeric_limits<float>::denorm_min(), std::nan("")}));
  w.set("f64", Value::make_float_array(ValueType::FLOAT64,
                                       {std::numeric_limits<double>::max(),
                                        std::numeric_limits<double>::lowest(), 1e-320}));
  w.set("str", Value::make_string_array({"", std::string("\0\xff", 2), "\xe2\x96\x81x"}));
  const Bytes bytes = w.to_bytes();
  const File f = parse_bytes(bytes);
  for (const KeyValue& kv : w.metadata()) EXPECT_EQ(*f.find(kv.key), kv.value) << kv.key;
}

TEST(Writer, DeepNestingUpToTheLimit) {
  Value v = Value::make_int_array(ValueType::INT8, {7});
  for (int d = 1; d < kMaxArrayDepth; ++d)
    v = Value::make_array_array({v, Value::make_array_array({})});
  Writer w;
  w.set("deep", v);  // kMaxArrayDepth arrays deep: fine
  const Bytes bytes = w.to_bytes();
  EXPECT_EQ(*parse_bytes(bytes).find("deep"), v);
  const Value deeper = Value::make_array_array({v});
  EXPECT_ERROR_CONTAINS(w.set("deeper", deeper), "nested more than 8 deep");
  EXPECT_EQ(w.find("deeper"), nullptr);
}

TEST(Writer, SetReplacesInPlaceAndKeepsOrder) {
  Writer w;
  w.set("a", Value::make_u32(1));
  w.set("b", Value::make_u32(2));
  w.set("c", Value::make_u32(3));
  w.set("a", Value::make_string("one"));
  ASSERT_EQ(w.metadata().size(), 3u);
  EXPECT_EQ(w.metadata()[0].key, "a");
  EXPECT_EQ(*w.find("a"), Value::make_string("one"));
  EXPECT_TRUE(w.remove("b"));
  EXPECT_FALSE(w.remove("b"));
  const Bytes bytes = w.to_bytes();
  const File f = parse_bytes(bytes);
  ASSERT_EQ(f.metadata().size(), 2u);
  EXPECT_EQ(f.metadata()[0].key, "a");
  EXPECT_EQ(f.metadata()[1].key, "c");
  EXPECT_EQ(f.get_string("a"), "one");
}

TEST(Writer, RejectsBadValues) {
  Writer w;
  EXPECT_ERROR_CONTAINS(w.set("", Value::make_u32(1)), "empty metadata key");
  Value bad_int = Value::make_u32(1);
  bad_int.type = ValueType::UINT8;
  bad_int.i = 256;
  EXPECT_ERROR_CONTAINS(w.set("k", bad_int), "key 'k': GGUF value: 256 does not fit in type u8");
  Value bad_type;
  bad_type.type = static_cast<ValueType>(42);
  EXPECT_ERROR_CONTAINS(w.set("k", bad_type), "unknown value type 42");
  Value bad_elems = Value::make_int_array(ValueType::BOOL, {1});
  bad_elems.ints.push_back(2);
  EXPECT_ERROR_CONTAINS(w.set("k", bad_elems), "does not fit in type bool");
  Value not_nested = Value::make_array_array({});
  not_nested.values.push_back(Value::make_u32(1));
  EXPECT_ERROR_CONTAINS(w.set("k", not_nested), "an array of arrays holds a u32");
  EXPECT_TRUE(w.metadata().empty());
}

TEST(Writer, Alignment) {
  for (uint32_t a : {1u, 8u, 32u, 64u, 4096u, kMaxAlignment}) {
    SCOPED_TRACE(a);
    Writer w;
    w.set("x", Value::make_string("abc"));
    w.set_alignment(a);
    w.add_tensor("t1", TensorType::F32, {3}, Bytes(12, 1));
    w.add_tensor("t2", TensorType::I8, {5}, Bytes(5, 2));
    w.add_tensor("t3", TensorType::F16, {1, 3}, Bytes(6, 3));
    const Bytes bytes = w.to_bytes();
    EXPECT_EQ(bytes.size(), w.file_size());
    const File f = parse_bytes(bytes);
    EXPECT_EQ(f.alignment(), a);
    EXPECT_EQ(f.get_int("general.alignment"), a);
    EXPECT_EQ(f.data_offset() % a, 0u);
    for (const TensorInfo& t : f.tensors()) {
      EXPECT_EQ(t.offset % a, 0u);
      EXPECT_EQ((f.data_offset() + t.offset) % a, 0u);
    }
    EXPECT_EQ(f.find_tensor("t2")->data[4], 2);
    EXPECT_EQ(f.find_tensor("t3")->data[0], 3);
    EXPECT_EQ(bytes.size() % a, 0u);  // every tensor is padded, the last one included
  }
  Writer w;
  EXPECT_ERROR_CONTAINS(w.set_alignment(0), "alignment 0 is not a power of two");
  EXPECT_ERROR_CONTAINS(w.set_alignment(3), "alignment 3 is not a power of two");
  EXPECT_ERROR_CONTAINS(w.set_alignment(kMaxAlignment * 2), "is not a power of two");
  EXPECT_ERROR_CONTAINS(w.set("general.alignment", Value::make_u64(64)), "must be u32, not u64");
  EXPECT_ERROR_CONTAINS(w.set("general.alignment", Value::make_u32(48)),
                        "48 is not a power of two");
  EXPECT_EQ(w.alignment(), 32u);
  w.set("general.alignment", Value::make_u32(16));
  EXPECT_EQ(w.alignment(), 16u);
  EXPECT_TRUE(w.remove("general.alignment"));
  EXPECT_EQ(w.alignment(), 32u);
}

TEST(Writer, TensorsOfEveryTypeRoundTrip) {
  Writer w;
  std::vector<TensorType> types;
  for (uint32_t id = 0; id < 64; ++id) {
    const auto tr = type_traits(id);
    if (!tr) continue;
    types.push_back(tr->type);
    const int64_t ne0 = tr->block_elems * 2;
    Bytes data(static_cast<size_t>(2 * tr->block_bytes * 3));
    for (size_t k = 0; k < data.size(); ++k) data[k] = static_cast<uint8_t>(k * 31 + id);
    w.add_tensor(std::string(tr->name) + ".weight", tr->type, {ne0, 3}, data);
  }
  EXPECT_EQ(types.size(), 31u);
  const Bytes bytes = w.to_bytes();
  const File f = parse_bytes(bytes);
  ASSERT_EQ(f.tensors().size(), types.size());
  for (size_t k = 0; k < types.size(); ++k) {
    const TensorInfo& t = f.tensors()[k];
    const TypeTraits& tr = traits(types[k]);
    EXPECT_EQ(t.type, types[k]);
    EXPECT_EQ(t.name, std::string(tr.name) + ".weight");
    EXPECT_EQ(t.n_dims, 2);
    EXPECT_EQ(t.ne[0], tr.block_elems * 2);
    EXPECT_EQ(t.ne[1], 3);
    EXPECT_EQ(t.nbytes, row_bytes(t.type, t.ne[0]) * 3);
    for (size_t b = 0; b < t.nbytes; ++b)
      ASSERT_EQ(t.data[b], static_cast<uint8_t>(b * 31 + static_cast<uint32_t>(t.type)));
  }
}

TEST(Writer, ShapesUpToFourDimsAndEmptyTensors) {
  Writer w;
  w.add_tensor("d1", TensorType::F32, {2}, Bytes(8));
  w.add_tensor("d4", TensorType::F32, {1, 2, 3, 4}, Bytes(96));
  w.add_tensor("empty0", TensorType::Q4_K, {0}, Bytes{});
  w.add_tensor("empty1", TensorType::F32, {4, 0, 2}, Bytes{});
  const Bytes bytes = w.to_bytes();
  const File f = parse_bytes(bytes);
  EXPECT_EQ(f.find_tensor("d4")->shape_string(), "[1, 2, 3, 4]");
  EXPECT_EQ(f.find_tensor("d4")->n_elements(), 24);
  EXPECT_EQ(f.find_tensor("d4")->n_rows(), 24);
  EXPECT_EQ(f.find_tensor("empty1")->nbytes, 0u);
  EXPECT_EQ(f.find_tensor("empty1")->n_elements(), 0);
  EXPECT_EQ(f.find_tensor("empty1")->shape_string(), "[4, 0, 2]");
}

TEST(Writer, RejectsBadTensors) {
  Writer w;
  w.add_tensor("ok", TensorType::F32, {4}, Bytes(16));
  EXPECT_ERROR_CONTAINS(w.add_tensor("", TensorType::F32, {4}, Bytes(16)), "empty tensor name");
  EXPECT_ERROR_CONTAINS(w.add_tensor(std::string(64, 'n'), TensorType::F32, {4}, Bytes(16)),
                        "is 64 bytes long; the limit is 63");
  w.add_tensor(std::string(63, 'n'), TensorType::F32, {4}, Bytes(16));
  EXPECT_ERROR_CONTAINS(w.add_tensor("ok", TensorType::F32, {4}, Bytes(16)),
                        "duplicate tensor 'ok'");
  EXPECT_ERROR_CONTAINS(w.add_tensor("t", TensorType::F32, {}, Bytes{}), "has 0 dimensions");
  EXPECT_ERROR_CONTAINS(w.add_tensor("t", TensorType::F32, {1, 1, 1, 1, 1}, Bytes(4)),
                        "has 5 dimensions");
  EXPECT_ERROR_CONTAINS(w.add_tensor("t", TensorType::F32, {4, -1}, Bytes{}),
                        "negative dimension -1");
  EXPECT_ERROR_CONTAINS(w.add_tensor("t", TensorType::Q4_K, {100}, Bytes(144)),
                        "ne[0] = 100, not a multiple of the block size 256");
  EXPECT_ERROR_CONTAINS(w.add_tensor("t", TensorType::F32, {4, 2}, Bytes(31)),
                        "tensor 't' of type F32 and shape 4x2 needs 32 bytes, got 31");
  EXPECT_ERROR_CONTAINS(w.add_tensor("t", TensorType::F32, {1ll << 40, 1ll << 40},
                                     Writer::Fill([](uint8_t*, size_t) {})),
                        "too many elements");
  EXPECT_ERROR_CONTAINS(
      w.add_tensor("t", TensorType::F64, {1ll << 62}, Writer::Fill([](uint8_t*, size_t) {})),
      "too large");
  EXPECT_ERROR_CONTAINS(w.add_tensor("t", static_cast<TensorType>(4), {4}, Bytes(16)),
                        "unknown type id 4");
  EXPECT_ERROR_CONTAINS(w.add_tensor("t", TensorType::F32, {4}, Writer::Fill{}),
                        "no fill function");
  EXPECT_EQ(w.tensor_count(), 2u);
}

TEST(Writer, LazyTensorsAreFilledAtWriteTime) {
  int calls = 0;
  Writer w;
  w.add_tensor("lazy", TensorType::Q8_0, {64, 2}, [&](uint8_t* dst, size_t n) {
    ++calls;
    EXPECT_EQ(n, 2u * 2 * 34);
    for (size_t k = 0; k < n; ++k) {
      EXPECT_EQ(dst[k], 0);  // zeroed beforehand
      dst[k] = static_cast<uint8_t>(k);
    }
  });
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(w.file_size(), 96u + 160u);  // header (68) padded to 96, data (136) to 160
  EXPECT_EQ(calls, 0);
  const Bytes bytes = w.to_bytes();
  EXPECT_EQ(calls, 1);
  const File f = parse_bytes(bytes);
  const TensorInfo* t = f.find_tensor("lazy");
  ASSERT_NE(t, nullptr);
  for (size_t k = 0; k < t->nbytes; ++k) ASSERT_EQ(t->data[k], static_cast<uint8_t>(k));

  TempDir dir;
  w.write(dir.file("lazy.gguf"));
  EXPECT_EQ(calls, 2);
  const File g = File::open(dir.file("lazy.gguf"));
  EXPECT_EQ(std::memcmp(g.find_tensor("lazy")->data, t->data, t->nbytes), 0);
}

TEST(Writer, WriteMatchesToBytesAndLeavesNoTemporary) {
  TempDir dir;
  const Writer w = test::sample_writer();
  const std::string path = dir.file("model.gguf");
  w.write(path);
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  const std::string on_disk = ::hearth::test::read_file(path);
  const Bytes mem = w.to_bytes();
  ASSERT_EQ(on_disk.size(), mem.size());
  EXPECT_EQ(std::memcmp(on_disk.data(), mem.data(), mem.size()), 0);
  const File f = File::open(path);
  EXPECT_EQ(f.tensors().size(), 5u);
  EXPECT_EQ(f.get_string("general.architecture"), "llama");
  // Overwriting an existing file works too.
  Writer small;
  small.set("x", Value::make_u32(1));
  small.write(path);
  EXPECT_EQ(File::open(path).metadata().size(), 1u);
}

TEST(Writer, WriteFailuresAreClearAndHarmless) {
  TempDir dir;
  const std::string missing = dir.file("no/such/dir/model.gguf");
  const std::string m = error_of([&] { test::sample_writer().write(missing); });
  EXPECT_EQ(m.rfind(missing + ": cannot create", 0), 0u) << m;

  // A throwing fill callback leaves the previous file untouched and no temporary.
  const std::string path = dir.file("keep.gguf");
  Writer good;
  good.set("v", Value::make_u32(1));
  good.write(path);
  const std::string before = ::hearth::test::read_file(path);
  Writer bad;
  bad.add_tensor("t", TensorType::F32, {4},
                 [](uint8_t*, size_t) { throw Error("fill failed on purpose"); });
  EXPECT_ERROR_CONTAINS(bad.write(path), "fill failed on purpose");
  EXPECT_EQ(::hearth::test::read_file(path), before);
  EXPECT_FALSE(fs::exists(path + ".tmp"));

  // Writing "into" a directory fails at the rename, again cleanly.
  fs::create_directories(dir.file("adir"));
  fs::create_directories(dir.file("adir/sub"));
  const std::string m2 = error_of([&] { good.write(dir.file("adir")); });
  EXPECT_NE(m2.find("cannot rename"), std::string::npos) << m2;
  EXPECT_FALSE(fs::exists(dir.file("adir.tmp")));

  if (::geteuid() != 0) {  // root ignores permissions
    fs::create_directories(dir.file("ro"));
    fs::permissions(dir.file("ro"), fs::perms::owner_read | fs::perms::owner_exec);
    const std::string m3 = error_of([&] { good.write(dir.file("ro/x.gguf")); });
    EXPECT_NE(m3.find("Permission denied"), std::string::npos) << m3;
    fs::permissions(dir.file("ro"), fs::perms::owner_all);
  }
}

TEST(Writer, HeaderIsPaddedEvenWithoutTensors) {
  Writer w;
  w.set("general.architecture", Value::make_string("x"));
  const Bytes bytes = w.to_bytes();
  // magic + version + counts (24) + key (8 + 20) + type (4) + string (8 + 1) = 65 -> 96
  EXPECT_EQ(bytes.size(), 96u);
  const File f = parse_bytes(bytes);
  EXPECT_TRUE(f.tensors().empty());
  EXPECT_EQ(f.data_offset(), 96u);
  const Bytes empty = Writer().to_bytes();
  EXPECT_EQ(empty.size(), 32u);
  EXPECT_TRUE(parse_bytes(empty).metadata().empty());
  // Unpadded files (older writers) still parse; the data section then starts past the end.
  const Bytes unpadded(bytes.begin(), bytes.begin() + 65);
  EXPECT_EQ(parse_bytes(unpadded).data_offset(), 96u);
}

TEST(Writer, Version2ImagesParse) {
  Bytes bytes = test::sample_writer().to_bytes();
  const File v3 = parse_bytes(bytes);
  const uint32_t two = 2;
  std::memcpy(bytes.data() + 4, &two, 4);
  const File v2 = parse_bytes(bytes, "v2.gguf");
  EXPECT_EQ(v2.version(), 2u);
  ASSERT_EQ(v2.metadata().size(), v3.metadata().size());
  for (size_t k = 0; k < v3.metadata().size(); ++k)
    EXPECT_EQ(v2.metadata()[k].value, v3.metadata()[k].value);
  ASSERT_EQ(v2.tensors().size(), v3.tensors().size());
  for (size_t k = 0; k < v3.tensors().size(); ++k) {
    EXPECT_EQ(v2.tensors()[k].name, v3.tensors()[k].name);
    EXPECT_EQ(v2.tensors()[k].offset, v3.tensors()[k].offset);
    EXPECT_EQ(v2.tensors()[k].nbytes, v3.tensors()[k].nbytes);
  }
}

}  // namespace
}  // namespace hearth::gguf
