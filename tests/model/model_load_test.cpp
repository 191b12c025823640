// Loading: hyperparameters from metadata, clear errors for what hearth cannot run, and the
// repacked matrices of the SIMD kernels. (`hearth synth`'s output: tests/tools/synth_test.cpp.)
#include <gtest/gtest.h>

#include <unistd.h>
#include <cmath>

#include <cstring>
#include <filesystem>

#include "common/shared_data.h"
#include "common/temp_dir.h"
#include "gguf/reader.h"
#include "gguf/writer.h"
#include "model/forward.h"
#include "model/reference_forward.h"
#include "model/tensor_names.h"
#include "model/weights.h"
#include "ops/cpu_features.h"
#include "ops/thread_pool.h"
#include "util/error.h"

namespace hearth {
namespace {

using test::TempDir;

std::string expect_load_error(const std::string& path) {
  try {
    Model::load(path);
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an Error loading " << path;
  return "";
}

// A tiny llama written by hand, with one step of the usual metadata or tensors altered.
gguf::Writer tiny_llama(const std::string& skip_tensor = "", const std::string& arch = "llama") {
  gguf::Writer w;
  w.set("general.architecture", gguf::Value::make_string(arch));
  auto u32 = [](uint32_t v) { return gguf::Value::make_u32(v); };
  w.set(arch + ".embedding_length", u32(32));
  w.set(arch + ".block_count", u32(1));
  w.set(arch + ".feed_forward_length", u32(64));
  w.set(arch + ".attention.head_count", u32(4));
  w.set(arch + ".attention.head_count_kv", u32(2));
  w.set(arch + ".context_length", u32(64));
  w.set(arch + ".vocab_size", u32(16));
  HParams hp;
  hp.arch = Arch::Llama;
  hp.n_embd = 32;
  hp.n_layer = 1;
  hp.n_ff = 64;
  hp.n_head = 4;
  hp.n_head_kv = 2;
  hp.head_dim = 8;
  hp.n_rot = 8;
  hp.n_vocab = 16;
  for (const TensorSpec& t : tensor_specs(hp)) {
    if (t.optional || t.name == skip_tensor) continue;
    int64_t n = 1;
    for (int64_t d : t.ne) n *= d;
    std::vector<float> v(static_cast<size_t>(n), 0.01f);
    std::vector<uint8_t> bytes(v.size() * 4);
    std::memcpy(bytes.data(), v.data(), bytes.size());
    w.add_tensor(t.name, TensorType::F32, t.ne, std::move(bytes));
  }
  return w;
}

TEST(ModelLoad, StoriesHyperparameters) {
  HEARTH_SHARED_OR_SKIP(path, "models/stories260K.gguf");
  auto m = Model::load(path);
  const HParams& hp = m->hparams();
  EXPECT_EQ(hp.arch, Arch::Llama);
  EXPECT_EQ(hp.n_embd, 64);
  EXPECT_EQ(hp.n_layer, 5);
  EXPECT_EQ(hp.n_head, 8);
  EXPECT_EQ(hp.n_head_kv, 4);
  EXPECT_EQ(hp.head_dim, 8);
  EXPECT_EQ(hp.n_ff, 172);
  EXPECT_EQ(hp.n_vocab, 512);
  EXPECT_EQ(hp.rope_layout, RopeLayout::Interleaved);
  EXPECT_FLOAT_EQ(hp.rope_freq_base, 10000.0f);
  EXPECT_NEAR(hp.rms_eps, 1e-5f, 1e-9f);
  EXPECT_FALSE(m->weights().tied_output);
}

TEST(ModelLoad, SyntheticArchitectureFeatures) {
  HEARTH_SHARED_OR_SKIP(qwen3, "models/synthetic/qwen3-F32.gguf");
  HEARTH_SHARED_OR_SKIP(qwen2, "models/synthetic/qwen2-F32.gguf");
  HEARTH_SHARED_OR_SKIP(untied, "models/synthetic/llama-untied-F32.gguf");
  auto q3 = Model::load(qwen3);
  EXPECT_EQ(q3->hparams().rope_layout, RopeLayout::Neox);
  EXPECT_TRUE(q3->weights().tied_output);
  EXPECT_EQ(q3->weights().layers[0].q_norm.size(), 64u);
  auto q2 = Model::load(qwen2);
  EXPECT_EQ(q2->weights().layers[1].bq.size(), 256u);
  auto ll = Model::load(untied);
  EXPECT_FALSE(ll->weights().tied_output);
  EXPECT_EQ(ll->weights().rope_freqs.size(), 32u);
  EXPECT_FLOAT_EQ(ll->hparams().rope_freq_base, 500000.0f);
}

TEST(ModelLoad, HandWrittenModelLoadsAndRuns) {
  TempDir dir;
  tiny_llama().write(dir.file("ok.gguf"));
  auto m = Model::load(dir.file("ok.gguf"));
  EXPECT_TRUE(m->weights().tied_output);
  ReferenceForward f(*m, 8);
  std::vector<int32_t> ids = {1, 2, 3};
  auto logits = f.eval(ids);
  ASSERT_EQ(logits.size(), 16u);
  for (float x : logits) EXPECT_TRUE(std::isfinite(x));
}

TEST(ModelLoad, MissingTensorIsNamed) {
  TempDir dir;
  tiny_llama("blk.0.ffn_up.weight").write(dir.file("missing.gguf"));
  const std::string msg = expect_load_error(dir.file("missing.gguf"));
  EXPECT_NE(msg.find("missing.gguf"), std::string::npos) << msg;
  EXPECT_NE(msg.find("blk.0.ffn_up.weight"), std::string::npos) << msg;
}

TEST(ModelLoad, UnsupportedArchitectureIsNamed) {
  TempDir dir;
  tiny_llama("", "gpt2").write(dir.file("gpt2.gguf"));
  const std::string msg = expect_load_error(dir.file("gpt2.gguf"));
  EXPECT_NE(msg.find("unsupported architecture 'gpt2'"), std::string::npos) << msg;
}

TEST(ModelLoad, WrongShapeAndAbsurdMetadataAreErrors) {
  TempDir dir;
  gguf::Writer w = tiny_llama();
  w.set("llama.attention.head_count_kv", gguf::Value::make_u32(3));  // 4 % 3 != 0
  w.write(dir.file("gqa.gguf"));
  EXPECT_NE(expect_load_error(dir.file("gqa.gguf")).find("head_count_kv"), std::string::npos);

  gguf::Writer w2 = tiny_llama();
  w2.set("llama.embedding_length", gguf::Value::make_u32(48));  // tensors are 32 wide
  w2.write(dir.file("shape.gguf"));
  EXPECT_NE(expect_load_error(dir.file("shape.gguf")).find("has shape"), std::string::npos);

  gguf::Writer w3 = tiny_llama();
  w3.set("llama.embedding_length", gguf::Value::make_string("wide"));
  w3.write(dir.file("type.gguf"));
  EXPECT_NE(expect_load_error(dir.file("type.gguf")).find("llama.embedding_length"),
            std::string::npos);

  gguf::Writer w4 = tiny_llama();
  w4.set("llama.rope.scaling.type", gguf::Value::make_string("longrope"));
  w4.write(dir.file("rope.gguf"));
  EXPECT_NE(expect_load_error(dir.file("rope.gguf")).find("longrope"), std::string::npos);
}

TEST(ModelLoad, RopeScalingMetadata) {
  TempDir dir;
  gguf::Writer w = tiny_llama();
  w.set("llama.rope.scaling.type", gguf::Value::make_string("yarn"));
  w.set("llama.rope.scaling.factor", gguf::Value::make_f32(4.0f));
  w.set("llama.rope.scaling.original_context_length", gguf::Value::make_u32(16));
  w.write(dir.file("yarn.gguf"));
  auto m = Model::load(dir.file("yarn.gguf"));
  EXPECT_EQ(m->hparams().rope_scaling, RopeScaling::Yarn);
  EXPECT_FLOAT_EQ(m->hparams().rope_freq_scale, 0.25f);
  EXPECT_EQ(m->hparams().rope_orig_ctx, 16);
  EXPECT_FLOAT_EQ(m->hparams().yarn_ext_factor, 1.0f);
}

}  // namespace
}  // namespace hearth

namespace hearth {
namespace {

// With the AVX2 kernels, Q8_0 matrices are repacked at load (tied embeddings keep the file's
// layout for row lookups); the forward pass agrees with the file-layout kernels within float
// rounding and the model's logits stay within the golden tolerance of the reference.
// Q8_0, Q4_0, Q4_K and Q6_K matrices are repacked at load (ops/packed_rows.h); the packed kernels
// give the file-layout kernels' logits within rounding.
void expect_repacked_model_matches_file_layout(const std::string& path) {
  auto packed = Model::load(path);
  ::setenv("HEARTH_REPACK", "0", 1);
  auto plain = Model::load(path);
  ::unsetenv("HEARTH_REPACK");
  const ModelWeights& w = packed->weights();
  ASSERT_TRUE(w.tied_output);
  EXPECT_NE(w.output.packed, nullptr);
  EXPECT_EQ(w.token_embd.packed, nullptr);
  for (const LayerWeights& L : w.layers)
    for (const MatrixView* m : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down})
      EXPECT_NE(m->packed, nullptr) << m->name;
  EXPECT_EQ(plain->weights().layers[0].wq.packed, nullptr);

  ops::ThreadPool pool(2);
  ForwardOptions fo;
  fo.n_ctx = 32;
  const std::vector<int32_t> ids = {1, 20, 300, 400, 55, 66, 77};
  Forward a(*packed, fo, pool), b(*plain, fo, pool);
  const std::vector<float> la = a.eval(ids), lb = b.eval(ids);
  ReferenceForward r(*plain, 32);
  const std::vector<float> ref = r.eval(ids);
  ASSERT_EQ(la.size(), lb.size());
  for (size_t i = 0; i < la.size(); ++i) {
    EXPECT_NEAR(la[i], lb[i], 1e-3) << i;
    EXPECT_NEAR(la[i], ref[i], 0.25) << i;  // activation quantization
  }
}

TEST(ModelLoad, Q8_0MatricesAreRepackedForTheSimdKernels) {
  HEARTH_SHARED_OR_SKIP(path, "models/synthetic/llama-tied-Q8_0.gguf");
  if (ops::simd_level() < ops::SimdLevel::Avx2) GTEST_SKIP() << "no AVX2 kernels here";
  expect_repacked_model_matches_file_layout(path);
}

TEST(ModelLoad, Q4_KMatricesAreRepackedForTheSimdKernels) {
  HEARTH_SHARED_OR_SKIP(path, "models/synthetic/llama-tied-Q4_K.gguf");
  if (ops::simd_level() < ops::SimdLevel::Avx2) GTEST_SKIP() << "no AVX2 kernels here";
  expect_repacked_model_matches_file_layout(path);
}

TEST(ModelLoad, Q6_KMatricesAreRepackedForTheSimdKernels) {
  HEARTH_SHARED_OR_SKIP(path, "models/synthetic/llama-tied-Q6_K.gguf");
  if (ops::simd_level() < ops::SimdLevel::Avx2) GTEST_SKIP() << "no AVX2 kernels here";
  expect_repacked_model_matches_file_layout(path);
}

// F16 / BF16 matrices are packed in groups of 8 rows at load; the float kernels do the same
// arithmetic on either layout, so the logits are bit-identical to the file layout's.
TEST(ModelLoad, HalfFloatMatricesArePackedWithIdenticalLogits) {
  if (ops::simd_level() < ops::SimdLevel::Avx2) GTEST_SKIP() << "no AVX2 kernels here";
  for (const char* name : {"models/synthetic/qwen3-F16.gguf", "models/synthetic/qwen3-BF16.gguf"}) {
    HEARTH_SHARED_OR_SKIP(path, name);
    auto packed = Model::load(path);
    ::setenv("HEARTH_REPACK", "0", 1);
    auto plain = Model::load(path);
    ::unsetenv("HEARTH_REPACK");
    for (const LayerWeights& L : packed->weights().layers)
      for (const MatrixView* m : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down})
        EXPECT_NE(m->packed, nullptr) << name << " " << m->name;
    EXPECT_EQ(plain->weights().layers[0].wq.packed, nullptr);
    ops::ThreadPool pool(2);
    ForwardOptions fo;
    fo.n_ctx = 32;
    const std::vector<int32_t> ids = {1, 20, 300, 400, 55, 66, 77, 8, 99, 10};
    Forward a(*packed, fo, pool), b(*plain, fo, pool);
    for (size_t n : {ids.size(), size_t{1}}) {  // a prefill chunk, then one decode token
      const std::vector<int32_t> part(ids.begin(), ids.begin() + static_cast<ptrdiff_t>(n));
      const std::vector<float> la = a.eval(part), lb = b.eval(part);
      ASSERT_EQ(la.size(), lb.size());
      EXPECT_EQ(std::memcmp(la.data(), lb.data(), la.size() * sizeof(float)), 0)
          << name << " n=" << n;
    }
  }
}

}  // namespace
}  // namespace hearth

namespace hearth {
namespace {

// Every file of ../shared/models/synthetic-arch binds: its keys give the layer kinds the
// golden README describes, and every tensor is found with its shape.
TEST(ModelLoad, NewArchitecturesBindWithTheirLayerKinds) {
  HEARTH_SHARED_OR_SKIP(dir, "models/synthetic-arch");
  const struct {
    const char* name;
    const char* kinds;
    int64_t kv_layers, state_floats;
  } cases[] = {
      {"qwen3moe", "attention:2", 2, 0},
      {"gemma3", "sliding-window:5,attention:1", 6, 0},
      // 3 DeltaNet layers: conv history 3 x 512 + 4 heads of 64 x 64.
      {"qwen35", "deltanet:3,attention:1", 1, 3 * (3 * 512 + 4 * 64 * 64)},
      {"qwen35moe", "deltanet:3,attention:1", 1, 3 * (3 * 512 + 4 * 64 * 64)},
      // 2 short-conv layers: 2 rows of 256.
      {"lfm2", "shortconv:1,attention:1,shortconv:1,attention:1", 2, 2 * 2 * 256},
  };
  for (const auto& c : cases)
    for (const char* type : {"F32", "Q8_0", "Q4_K"}) {
      SCOPED_TRACE(std::string(c.name) + "-" + type);
      auto m = Model::load(dir + "/" + c.name + "-" + type + ".gguf");
      const HParams& hp = m->hparams();
      EXPECT_EQ(hp.layer_kinds_string(), c.kinds);
      EXPECT_EQ(hp.n_kv_layers(), c.kv_layers);
      EXPECT_EQ(hp.recurrent_state_floats(), c.state_floats);
      EXPECT_TRUE(m->weights().tied_output);
      for (int64_t l = 0; l < hp.n_layer; ++l) {
        const LayerWeights& L = m->weights().layers[static_cast<size_t>(l)];
        EXPECT_EQ(L.gate_exps.size(), hp.is_moe() ? static_cast<size_t>(hp.n_expert) : 0u);
        EXPECT_EQ(L.wq.data != nullptr, !hp.is_recurrent(l));
      }
    }
}

}  // namespace
}  // namespace hearth
