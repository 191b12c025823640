// Hand-made malformed images: each is rejected with "bad.gguf: <problem>" naming what is wrong.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "gguf/reader.h"
#include "gguf_test_util.h"
#include "util/error.h"

namespace hearth::gguf {
namespace {

using test::Bytes;
using test::parse_bytes;
using test::Raw;

constexpr uint64_t kMax64 = std::numeric_limits<uint64_t>::max();
constexpr uint32_t kF32 = 0;
constexpr uint32_t kQ4K = 12;

// One KV and one 4-float tensor at data offset 0, then `extra` more bytes of data.
Bytes valid_image() {
  Raw r;
  r.header(1, 1).kv_str("general.architecture", "llama").tensor("w", {4}, kF32, 0).pad_to(32);
  r.zeros(16);
  return r.b;
}

TEST(Hostile, ValidBaselineParses) {
  const Bytes b = valid_image();
  const File f = parse_bytes(b);
  EXPECT_EQ(f.tensors().size(), 1u);
  EXPECT_EQ(f.tensors()[0].nbytes, 16u);
}

TEST(Hostile, TooSmallOrEmpty) {
  EXPECT_PARSE_ERROR(Bytes{}, "not a GGUF file: only 0 bytes long");
  EXPECT_PARSE_ERROR((Bytes{'G', 'G', 'U'}), "only 3 bytes long");
  EXPECT_PARSE_ERROR((Bytes{'G', 'G', 'U', 'F', 3, 0}),
                     "truncated while reading the version at offset 4: need 4 bytes, 2 remain");
  EXPECT_PARSE_ERROR(Raw().u32(kMagic).u32(3).u64(0).b, "truncated while reading the metadata");
}

TEST(Hostile, BadMagic) {
  Bytes b = valid_image();
  b[3] = 'L';
  b[2] = 'M';
  EXPECT_PARSE_ERROR(b, "not a GGUF file: bad magic \"GGML\" at offset 0");
  const std::string text = "{\"hello\": 1}";
  EXPECT_PARSE_ERROR(Bytes(text.begin(), text.end()), "bad magic \"{\\\"he\"");
  EXPECT_PARSE_ERROR((Bytes{0, 1, 2, 3, 4, 5, 6, 7}), "bad magic \"\\x00\\x01\\x02\\x03\"");
}

TEST(Hostile, Versions) {
  EXPECT_PARSE_ERROR(Raw().header(0, 0, 1).b, "GGUF version 1 is not supported");
  EXPECT_PARSE_ERROR(Raw().header(0, 0, 0).b, "unsupported GGUF version 0");
  EXPECT_PARSE_ERROR(Raw().header(0, 0, 4).b, "unsupported GGUF version 4 at offset 4");
  EXPECT_PARSE_ERROR(Raw().header(0, 0, 0x03000000).b, "big-endian GGUF (version 3)");
  EXPECT_EQ(parse_bytes(Raw().header(0, 0, 2).b).version(), 2u);
  EXPECT_EQ(parse_bytes(Raw().header(0, 0, 3).b).version(), 3u);
}

TEST(Hostile, HugeCounts) {
  EXPECT_PARSE_ERROR(Raw().header(kMax64, 0).b,
                     "the header at offset 8 claims 18446744073709551615 tensors but only 0 bytes "
                     "remain (each needs at least 32)");
  EXPECT_PARSE_ERROR(Raw().header(0, 1ull << 60).zeros(100).b,
                     "claims 1152921504606846976 metadata entries");
  EXPECT_PARSE_ERROR(Raw().header(1, 1).zeros(40).b,
                     "header claims 1 tensors and 1 metadata entries but only 40 bytes remain");
}

TEST(Hostile, HugeStringLengths) {
  EXPECT_PARSE_ERROR(Raw().header(0, 1).u64(1ull << 62).zeros(20).b,
                     "truncated while reading the key of metadata entry 0 at offset 24: string "
                     "length 4611686018427387904 exceeds the 20 bytes that remain");
  EXPECT_PARSE_ERROR(Raw().header(0, 1).kv_type("k", ValueType::STRING).u64(kMax64).b,
                     "the value of key 'k' at offset 37: string length 18446744073709551615");
  Raw r;
  r.header(1, 0).u64(kMax64).zeros(40);
  EXPECT_PARSE_ERROR(r.b, "the name of tensor info 0 at offset 24: string length");
}

TEST(Hostile, HugeArrayCounts) {
  Raw a;
  a.header(0, 1).kv_type("a", ValueType::ARRAY).u32(0).u64(1000).zeros(10);
  EXPECT_PARSE_ERROR(a.b,
                     "the array in the value of key 'a' at offset 41 claims 1000 u8 elements but "
                     "only 10 bytes remain");
  Raw s;
  s.header(0, 1).kv_type("tokenizer.ggml.tokens", ValueType::ARRAY).u32(8).u64(kMax64);
  EXPECT_PARSE_ERROR(s.b, "claims 18446744073709551615 string elements");
  Raw n;
  n.header(0, 1).kv_type("n", ValueType::ARRAY).u32(9).u64(1ull << 40).zeros(64);
  EXPECT_PARSE_ERROR(n.b, "claims 1099511627776 array elements");
  Raw d;
  d.header(0, 1).kv_type("d", ValueType::ARRAY).u32(12).u64(3).zeros(16);
  EXPECT_PARSE_ERROR(d.b, "claims 3 f64 elements but only 16 bytes remain (each needs at least 8)");
  // Nested: the inner array's count is checked against what remains at that point.
  Raw inner;
  inner.header(0, 1).kv_type("x", ValueType::ARRAY).u32(9).u64(1).u32(4).u64(100).zeros(8);
  EXPECT_PARSE_ERROR(inner.b, "the array in the value of key 'x' (array element 0) at offset");
}

Bytes nested_arrays(int depth) {
  Raw r;
  r.header(0, 1).kv_type("deep", ValueType::ARRAY);
  for (int d = 0; d < depth - 1; ++d) r.u32(9).u64(1);
  r.u32(0).u64(0);
  return r.b;
}

TEST(Hostile, DeepNesting) {
  const Bytes ok = nested_arrays(kMaxArrayDepth);
  const File f = parse_bytes(ok);
  EXPECT_EQ(f.find("deep")->to_display(), "[[[[[[[[]]]]]]]]");
  EXPECT_PARSE_ERROR(nested_arrays(kMaxArrayDepth + 1), "arrays nested more than 8 deep");
  EXPECT_PARSE_ERROR(nested_arrays(1000), "arrays nested more than 8 deep");
  // A cycle-free but very long chain must not recurse deeply: the limit stops it first.
  Raw r;
  r.header(0, 1).kv_type("deep", ValueType::ARRAY);
  for (int d = 0; d < 100000; ++d) r.u32(9).u64(1);
  EXPECT_PARSE_ERROR(r.b,
                     "(array element 0, element 0, element 0, element 0, element 0, element 0, "
                     "element 0, element 0) at offset");
}

TEST(Hostile, UnknownValueTypes) {
  EXPECT_PARSE_ERROR(Raw().header(0, 1).kv_type("k", static_cast<ValueType>(13)).u32(0).b,
                     "key 'k' has unknown value type 13 at offset 33");
  EXPECT_PARSE_ERROR(Raw().header(0, 1).kv_type("k", static_cast<ValueType>(0xFFFFFFFF)).u32(0).b,
                     "unknown value type 4294967295");
  EXPECT_PARSE_ERROR(Raw().header(0, 1).kv_type("arr", ValueType::ARRAY).u32(99).u64(0).b,
                     "the value of key 'arr' at offset 39: array of unknown element type 99");
}

TEST(Hostile, BoolsMustBeZeroOrOne) {
  EXPECT_PARSE_ERROR(Raw().header(0, 1).kv_type("b", ValueType::BOOL).u8(2).b,
                     "invalid bool 2 in the value of key 'b' at offset 37 (must be 0 or 1)");
  Raw r;
  r.header(0, 1).kv_type("bs", ValueType::ARRAY).u32(7).u64(3).u8(1).u8(255).u8(0);
  EXPECT_PARSE_ERROR(r.b,
                     "invalid bool 255 in the value of key 'bs' (array element 1) at offset 51");
}

TEST(Hostile, DuplicatesAndEmptyNames) {
  EXPECT_PARSE_ERROR(Raw().header(0, 2).kv_u32("k", 1).kv_u32("k", 2).b,
                     "duplicate key 'k' at offset 41");
  EXPECT_PARSE_ERROR(Raw().header(0, 1).kv_u32("", 1).b,
                     "metadata entry 0 at offset 24 has an empty key");
  Raw t;
  t.header(2, 0).tensor("w", {4}, kF32, 0).tensor("w", {4}, kF32, 32).pad_to(32).zeros(64);
  EXPECT_PARSE_ERROR(t.b, "duplicate tensor name 'w' at offset 57");
  Raw e;
  e.header(1, 0).tensor("", {4}, kF32, 0).pad_to(32).zeros(16);
  EXPECT_PARSE_ERROR(e.b, "tensor info 0 at offset 24 has an empty name");
}

TEST(Hostile, Dimensions) {
  Raw zero;
  zero.header(1, 0).str("w").u32(0).u32(kF32).u64(0).zeros(64);
  EXPECT_PARSE_ERROR(zero.b, "tensor 'w' has 0 dimensions at offset 33 (must be 1 to 4)");
  Raw five;
  five.header(1, 0).tensor("w", {1, 1, 1, 1, 1}, kF32, 0).zeros(64);
  EXPECT_PARSE_ERROR(five.b, "tensor 'w' has 5 dimensions");
  Raw neg;
  neg.header(1, 0).tensor("w", {4, -2}, kF32, 0).zeros(64);
  EXPECT_PARSE_ERROR(neg.b, "tensor 'w' has a negative dimension ne[1] = -2 at offset 45");
  Raw big;
  big.header(1, 0).tensor("w", {1ll << 40, 1ll << 40}, kF32, 0).zeros(64);
  EXPECT_PARSE_ERROR(big.b,
                     "tensor 'w' shape [1099511627776, 1099511627776] has too many elements");
  // Zero dims do not hide an overflowing product of the others (n_rows() would overflow).
  Raw hidden;
  hidden.header(1, 0).tensor("w", {0, 1ll << 32, 1ll << 32}, kF32, 0).zeros(64);
  EXPECT_PARSE_ERROR(hidden.b, "has too many elements");
  Raw bytes;
  bytes.header(1, 0).tensor("w", {1ll << 62}, 28 /* F64 */, 0).zeros(64);
  EXPECT_PARSE_ERROR(bytes.b, "tensor 'w' shape [4611686018427387904] is too large");
  Raw block;
  block.header(1, 0).tensor("w", {100, 2}, kQ4K, 0).zeros(64);
  EXPECT_PARSE_ERROR(
      block.b,
      "tensor 'w' of type Q4_K has ne[0] = 100, which is not a multiple of the block "
      "size 256");
}

TEST(Hostile, UnknownTensorType) {
  Raw r;
  r.header(1, 0).tensor("blk.0.attn_q.weight", {32}, 4, 0).zeros(64);
  EXPECT_PARSE_ERROR(r.b, "tensor 'blk.0.attn_q.weight' has unknown type id 4 at offset");
  Raw r2;
  r2.header(1, 0).tensor("w", {32}, 1000, 0).zeros(64);
  EXPECT_PARSE_ERROR(r2.b, "unknown type id 1000");
}

TEST(Hostile, OffsetsAndBounds) {
  Raw mis;
  mis.header(1, 0).tensor("w", {4}, kF32, 16).pad_to(32).zeros(64);
  EXPECT_PARSE_ERROR(
      mis.b, "tensor 'w' data offset 16 (at offset 49) is not a multiple of the alignment 32");
  Raw past;
  past.header(1, 0).tensor("w", {1024}, kF32, 0).pad_to(32).zeros(16);
  EXPECT_PARSE_ERROR(past.b,
                     "tensor 'w' data (offset 0 + 4096 bytes, from data section start 64) extends "
                     "past the end of the file (80 bytes)");
  Raw far;
  far.header(1, 0).tensor("w", {4}, kF32, kMax64 - 31).pad_to(32).zeros(16);
  EXPECT_PARSE_ERROR(far.b, "extends past the end of the file");
  Raw nodata;  // header not padded, no data at all
  nodata.header(1, 0).tensor("w", {0}, kF32, 0);
  EXPECT_PARSE_ERROR(nodata.b,
                     "the data section would start at offset 64, past the end of the file");
  Raw overlap;
  overlap.header(2, 0).tensor("a", {16}, kF32, 0).tensor("b", {4}, kF32, 32).pad_to(32).zeros(64);
  EXPECT_PARSE_ERROR(overlap.b, "tensors 'a' (offset 0, 64 bytes) and 'b' (offset 32) overlap");
  // Empty tensors may share an offset with anything.
  Raw empties;
  empties.header(2, 0).tensor("a", {4}, kF32, 0).tensor("b", {0}, kF32, 0).pad_to(32).zeros(16);
  EXPECT_EQ(parse_bytes(empties.b).tensors().size(), 2u);
}

Bytes with_alignment(ValueType t, uint64_t a) {
  Raw r;
  r.header(1, 1).kv_type("general.alignment", t);
  if (scalar_size(t) == 8) {
    r.u64(a);
  } else {
    r.u32(static_cast<uint32_t>(a));
  }
  r.tensor("w", {4}, kF32, 0).pad_to(64).zeros(16);
  return r.b;
}

TEST(Hostile, Alignment) {
  EXPECT_EQ(parse_bytes(with_alignment(ValueType::UINT32, 64)).alignment(), 64u);
  EXPECT_EQ(parse_bytes(with_alignment(ValueType::UINT32, 1)).alignment(), 1u);
  EXPECT_PARSE_ERROR(with_alignment(ValueType::UINT32, 0),
                     "key 'general.alignment' is 0; it must be a power of two from 1 to 65536");
  EXPECT_PARSE_ERROR(with_alignment(ValueType::UINT32, 3), "'general.alignment' is 3;");
  EXPECT_PARSE_ERROR(with_alignment(ValueType::UINT32, 1u << 17), "is 131072; it must be");
  EXPECT_PARSE_ERROR(with_alignment(ValueType::UINT64, 32),
                     "key 'general.alignment' has type u64; it must be u32");
  EXPECT_PARSE_ERROR(with_alignment(ValueType::INT32, 32), "has type i32; it must be u32");
  Raw s;
  s.header(0, 1).kv_str("general.alignment", "32");
  EXPECT_PARSE_ERROR(s.b, "has type string; it must be u32");
}

TEST(Hostile, TruncationMessagesNameKeyElementAndOffset) {
  Raw r;
  r.header(0, 1).kv_type("tokenizer.ggml.tokens", ValueType::ARRAY).u32(8).u64(3);
  r.str("a").u64(10).zeros(9);  // element 1 claims 10 bytes, 9 remain... plus element 2 missing
  EXPECT_PARSE_ERROR(r.b,
                     "truncated while reading the value of key 'tokenizer.ggml.tokens' (array "
                     "element 1) at offset 78: string length 10 exceeds the 9 bytes that remain");
  Raw t;
  t.header(1, 0).str("w").u32(4).i64(4).i64(4).zeros(3);  // 32 bytes: passes the count check
  EXPECT_PARSE_ERROR(
      t.b,
      "truncated while reading the shape of tensor 'w' at offset 53: need 8 bytes, 3 "
      "remain");
}

TEST(Hostile, NamesInMessagesAreEscapedAndCut) {
  std::string key(200, 'k');
  key[3] = '\n';
  key[4] = '\'';
  const std::string msg = test::parse_error(Raw().header(0, 2).kv_u32(key, 1).kv_u32(key, 1).b);
  EXPECT_NE(msg.find("duplicate key 'kkk\\n\\'kk"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'... (200 bytes) at offset"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos);
}

TEST(Hostile, OpenNamesThePath) {
  try {
    (void)File::open("/nonexistent/dir/model.gguf");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("/nonexistent/dir/model.gguf: ", 0), 0u) << e.what();
  }
}

}  // namespace
}  // namespace hearth::gguf
