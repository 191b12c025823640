// The real GGUF files in ../shared: stories260K in detail, every synthetic model and every
// vocabulary file loads, and re-writing any of them with Writer reproduces it byte for byte.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/shared_data.h"
#include "gguf/reader.h"
#include "gguf/writer.h"
#include "gguf_test_util.h"
#include "util/error.h"

namespace hearth::gguf {
namespace {

namespace fs = std::filesystem;
using test::Bytes;
using test::read_bytes;

std::vector<std::string> gguf_files(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".gguf") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

// Copies a parsed file into a Writer (same metadata order, alignment and tensors).
Writer rewrite(const File& f) {
  Writer w;
  for (const KeyValue& kv : f.metadata()) w.set(kv.key, kv.value);
  for (const TensorInfo& t : f.tensors()) {
    std::vector<int64_t> ne(t.ne.begin(), t.ne.begin() + t.n_dims);
    w.add_tensor(t.name, t.type, ne, Bytes(t.data, t.data + t.nbytes));
  }
  return w;
}

TEST(SharedFiles, Stories260KHeader) {
  HEARTH_SHARED_OR_SKIP(path, "models/stories260K.gguf");
  const File f = File::open(path);
  EXPECT_EQ(f.name(), path);
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.metadata().size(), 19u);
  EXPECT_EQ(f.tensors().size(), 48u);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.find("general.alignment"), nullptr);
  EXPECT_EQ(f.file_size(), 1185376u);
  EXPECT_EQ(f.data_offset(), 14176u);  // header ends at 14152, rounded up to 32

  EXPECT_EQ(f.metadata().front().key, "tokenizer.ggml.tokens");
  EXPECT_EQ(f.metadata().back().key, "llama.attention.layer_norm_rms_epsilon");
  EXPECT_EQ(f.get_string("general.architecture"), "llama");
  EXPECT_EQ(f.get_string("tokenizer.ggml.model"), "llama");
  EXPECT_EQ(f.get_int("llama.embedding_length"), 64);
  EXPECT_EQ(f.get_int("llama.block_count"), 5);
  EXPECT_EQ(f.get_int("llama.attention.head_count"), 8);
  EXPECT_EQ(f.get_int("llama.attention.head_count_kv"), 4);
  EXPECT_EQ(f.get_int("llama.feed_forward_length"), 172);
  EXPECT_EQ(f.get_int("llama.context_length"), 2048);
  EXPECT_EQ(f.get_int("tokenizer.ggml.seperator_token_id"), 4294967295);
  EXPECT_EQ(f.get_int("llama.rope.freq_base"), std::nullopt);
  EXPECT_EQ(f.get_float("llama.attention.layer_norm_rms_epsilon"),
            static_cast<double>(9.9999997e-06f));
  EXPECT_EQ(f.get_float("llama.block_count"), 5.0);  // integers are accepted as floats
  EXPECT_EQ(f.find("llama.attention.layer_norm_rms_epsilon")->type, ValueType::FLOAT32);

  const Value* tokens = f.get_array("tokenizer.ggml.tokens");
  ASSERT_NE(tokens, nullptr);
  EXPECT_EQ(tokens->elem_type, ValueType::STRING);
  ASSERT_EQ(tokens->array_size(), 512u);
  EXPECT_EQ(tokens->strings[0], "<unk>");
  EXPECT_EQ(tokens->strings[1], "<s>");
  EXPECT_EQ(tokens->strings[2], "</s>");
  EXPECT_EQ(tokens->strings[3], "<0x00>");
  EXPECT_EQ(tokens->strings[258], "<0xFF>");
  EXPECT_EQ(tokens->strings[403], "\xe2\x96\x81Once");
  EXPECT_EQ(tokens->to_display(3), "[\"<unk>\", \"<s>\", \"</s>\", ... (512 items)]");
  const Value* scores = f.get_array("tokenizer.ggml.scores");
  ASSERT_NE(scores, nullptr);
  EXPECT_EQ(scores->elem_type, ValueType::FLOAT32);
  ASSERT_EQ(scores->floats.size(), 512u);
  const Value* types = f.get_array("tokenizer.ggml.token_type");
  ASSERT_NE(types, nullptr);
  EXPECT_EQ(types->elem_type, ValueType::INT32);
  ASSERT_EQ(types->ints.size(), 512u);
  EXPECT_EQ(types->ints[0], 2);
  EXPECT_EQ(types->ints[1], 3);
  EXPECT_EQ(types->ints[3], 6);
}

TEST(SharedFiles, Stories260KTypedGettersRejectWrongTypes) {
  HEARTH_SHARED_OR_SKIP(path, "models/stories260K.gguf");
  const File f = File::open(path);
  auto expect_msg = [&](auto fn, const std::string& needle) {
    try {
      fn();
      ADD_FAILURE() << "no error, expected: " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).rfind(path + ": ", 0), 0u) << e.what();
    }
  };
  expect_msg([&] { (void)f.get_int("general.architecture"); },
             "key 'general.architecture' has type string, expected an integer");
  expect_msg([&] { (void)f.get_float("tokenizer.ggml.tokens"); },
             "key 'tokenizer.ggml.tokens' has type array, expected a number");
  expect_msg([&] { (void)f.get_string("llama.block_count"); },
             "key 'llama.block_count' has type u32, expected a string");
  expect_msg([&] { (void)f.get_bool("general.name"); }, "has type string, expected a bool");
  expect_msg([&] { (void)f.get_array("llama.block_count"); }, "expected an array");
  expect_msg([&] { (void)f.get_int("llama.attention.layer_norm_rms_epsilon"); },
             "has type f32, expected an integer");
  EXPECT_EQ(f.get_bool("llama.block_count"), true);
  EXPECT_EQ(f.get_array("no.such.key"), nullptr);
  EXPECT_EQ(f.get_string("no.such.key"), std::nullopt);
}

TEST(SharedFiles, Stories260KTensors) {
  HEARTH_SHARED_OR_SKIP(path, "models/stories260K.gguf");
  const File f = File::open(path);
  const TensorInfo* emb = f.find_tensor("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->n_dims, 2);
  EXPECT_EQ(emb->ne[0], 64);
  EXPECT_EQ(emb->ne[1], 512);
  EXPECT_EQ(emb->shape_string(), "[64, 512]");
  EXPECT_EQ(emb->type, TensorType::F32);
  EXPECT_EQ(emb->offset, 0u);
  EXPECT_EQ(emb->nbytes, 131072u);
  EXPECT_EQ(emb->n_elements(), 32768);
  EXPECT_EQ(emb->n_rows(), 512);
  EXPECT_EQ(&f.tensors()[0], emb);

  const TensorInfo* norm = f.find_tensor("output_norm.weight");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(norm->shape_string(), "[64]");
  EXPECT_EQ(norm->offset, 131072u);
  EXPECT_EQ(f.find_tensor("output.weight")->offset, 131328u);
  EXPECT_EQ(f.find_tensor("nope"), nullptr);

  struct Shape {
    const char* suffix;
    int64_t ne0, ne1;
  };
  const Shape per_block[] = {
      {"attn_norm.weight", 64, 1},  {"attn_q.weight", 64, 64},      {"attn_k.weight", 64, 32},
      {"attn_v.weight", 64, 32},    {"attn_output.weight", 64, 64}, {"ffn_norm.weight", 64, 1},
      {"ffn_gate.weight", 64, 172}, {"ffn_up.weight", 64, 172},     {"ffn_down.weight", 172, 64}};
  for (int l = 0; l < 5; ++l) {
    for (const Shape& s : per_block) {
      const std::string name = "blk." + std::to_string(l) + "." + s.suffix;
      const TensorInfo* t = f.find_tensor(name);
      ASSERT_NE(t, nullptr) << name;
      EXPECT_EQ(t->type, TensorType::F32) << name;
      EXPECT_EQ(t->ne[0], s.ne0) << name;
      EXPECT_EQ(t->ne[1], s.ne1) << name;
      EXPECT_EQ(t->n_dims, s.ne1 == 1 ? 1 : 2) << name;
    }
  }

  // Data pointers are into the mapping, aligned, in bounds; the last tensor ends the file.
  uint64_t floats = 0;
  uint64_t end = 0;
  for (const TensorInfo& t : f.tensors()) {
    EXPECT_EQ(t.offset % 32, 0u) << t.name;
    EXPECT_EQ(t.nbytes, static_cast<uint64_t>(t.n_elements()) * 4) << t.name;
    floats += static_cast<uint64_t>(t.n_elements());
    end = std::max(end, f.data_offset() + t.offset + t.nbytes);
  }
  EXPECT_EQ(floats, 292800u);
  EXPECT_EQ(end, f.file_size());

  // parse() over the same bytes gives the same result, with data pointers into that buffer.
  const Bytes bytes = read_bytes(path);
  const File g = File::parse(bytes.data(), bytes.size(), "copy.gguf");
  ASSERT_EQ(g.tensors().size(), f.tensors().size());
  for (size_t k = 0; k < f.tensors().size(); ++k) {
    const TensorInfo& a = f.tensors()[k];
    const TensorInfo& b = g.tensors()[k];
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(b.data, bytes.data() + g.data_offset() + b.offset);
    EXPECT_EQ(std::memcmp(a.data, b.data, a.nbytes), 0) << a.name;
  }
  for (size_t k = 0; k < f.metadata().size(); ++k)
    EXPECT_EQ(f.metadata()[k].value, g.metadata()[k].value) << f.metadata()[k].key;

  // A plausible embedding value (finite, small).
  float first = 0;
  std::memcpy(&first, emb->data, sizeof first);
  EXPECT_TRUE(std::isfinite(first));
  EXPECT_LT(std::fabs(first), 100.0f);
}

TEST(SharedFiles, SyntheticModelsLoad) {
  HEARTH_SHARED_OR_SKIP(dir, "models/synthetic");
  const auto files = gguf_files(dir);
  EXPECT_GE(files.size(), 22u);
  for (const std::string& path : files) {
    SCOPED_TRACE(path);
    const File f = File::open(path);
    EXPECT_EQ(f.version(), 3u);
    ASSERT_FALSE(f.tensors().empty());
    const std::string stem = fs::path(path).stem().string();  // e.g. qwen3-Q4_K
    const std::string arch = stem.substr(0, stem.find('-'));
    EXPECT_EQ(f.get_string("general.architecture"), arch);
    const auto want = type_from_name(stem.substr(stem.rfind('-') + 1));
    ASSERT_TRUE(want.has_value());
    bool seen = false;
    for (const TensorInfo& t : f.tensors()) {
      seen = seen || t.type == *want;
      EXPECT_NE(t.data, nullptr);
      EXPECT_LE(f.data_offset() + t.offset + t.nbytes, f.file_size());
    }
    EXPECT_TRUE(seen) << "no tensor of type " << type_name(*want);
    const Value* tokens = f.get_array("tokenizer.ggml.tokens");
    ASSERT_NE(tokens, nullptr);
    EXPECT_EQ(tokens->array_size(), 512u);
  }
}

TEST(SharedFiles, TokenizerVocabsLoad) {
  HEARTH_SHARED_OR_SKIP(index_path, "tokenizers/index.json");
  const auto index = nlohmann::json::parse(::hearth::test::read_file(index_path));
  ASSERT_EQ(index["vocabs"].size(), 8u);
  for (const auto& v : index["vocabs"]) {
    const std::string path =
        ::hearth::test::shared_path("tokenizers/" + v["gguf"].get<std::string>());
    SCOPED_TRACE(path);
    const File f = File::open(path);
    EXPECT_TRUE(f.tensors().empty());
    EXPECT_EQ(f.get_string("tokenizer.ggml.model"), v["tokenizer_model"].get<std::string>());
    const Value* tokens = f.get_array("tokenizer.ggml.tokens");
    ASSERT_NE(tokens, nullptr);
    EXPECT_EQ(tokens->array_size(), v["n_tokens"].get<size_t>());
    if (v["n_merges"].get<size_t>() > 0) {
      const Value* merges = f.get_array("tokenizer.ggml.merges");
      ASSERT_NE(merges, nullptr);
      EXPECT_EQ(merges->array_size(), v["n_merges"].get<size_t>());
    }
    if (!v["bos_token_id"].is_null()) {
      EXPECT_EQ(f.get_int("tokenizer.ggml.bos_token_id"), v["bos_token_id"].get<int64_t>());
    }
    if (!v["add_bos_token"].is_null()) {
      EXPECT_EQ(f.get_bool("tokenizer.ggml.add_bos_token"), v["add_bos_token"].get<bool>());
    }
  }
}

// Writer reproduces every shared file exactly (same layout rules as llama.cpp's writer), except
// that older vocabulary files without tensors end unpadded where Writer pads the header.
TEST(SharedFiles, RewriteIsByteIdentical) {
  HEARTH_SHARED_OR_SKIP(models, "models");
  std::vector<std::string> files = {models + "/stories260K.gguf"};
  for (const auto& p : gguf_files(models + "/synthetic")) files.push_back(p);
  if (::hearth::test::shared_exists("tokenizers"))
    for (const auto& p : gguf_files(::hearth::test::shared_path("tokenizers"))) files.push_back(p);
  for (const std::string& path : files) {
    SCOPED_TRACE(path);
    const Bytes original = read_bytes(path);
    const File f = File::parse(original.data(), original.size(), path);
    const Bytes again = rewrite(f).to_bytes();
    Bytes expected = original;
    if (f.tensors().empty()) expected.resize(f.data_offset(), 0);
    ASSERT_EQ(again.size(), expected.size());
    EXPECT_TRUE(again == expected);
  }
}

}  // namespace
}  // namespace hearth::gguf
