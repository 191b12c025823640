// `hearth synth`'s writer (tools/synth.h): presets and types that load back and compute, the
// same file from the same spec, and llama.cpp's Q4_K_M mixture rule.
#include "tools/synth.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>

#include "common/shared_data.h"
#include "common/temp_dir.h"
#include "gguf/reader.h"
#include "model/forward.h"
#include "model/reference_forward.h"
#include "model/tensor_names.h"
#include "model/weights.h"
#include "ops/thread_pool.h"
#include "util/error.h"

namespace hearth {
namespace {

namespace fs = std::filesystem;

// Logits of a model with random weights: all finite and not flat.
void expect_finite_and_not_flat(const std::vector<float>& logits) {
  float lo = logits[0], hi = logits[0];
  for (float x : logits) {
    ASSERT_TRUE(std::isfinite(x));
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  EXPECT_GT(hi - lo, 0.1f) << "logits are flat: weights were not randomised";
}
using test::TempDir;

class SynthRoundTrip : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(SynthRoundTrip, WritesLoadsAndComputes) {
  HEARTH_SHARED_OR_SKIP(vocab, "models/stories260K.gguf");
  const auto& [preset, type] = GetParam();
  TempDir dir;
  SynthSpec s = *synth_preset(preset);
  s.vocab_path = vocab;
  s.weight_type = *type_from_name(type);
  if (s.weight_type != TensorType::F32 && traits(s.weight_type).block_elems == 256) {
    s.hp.n_embd = 256;  // K-quant rows are 256-element super-blocks
    s.hp.n_ff = 512;
    s.hp.head_dim = s.hp.n_rot = 64;
  }
  const std::string a = dir.file("a.gguf"), b = dir.file("b.gguf");
  const uint64_t size = write_synthetic_model(s, a);
  EXPECT_EQ(size, fs::file_size(a));
  write_synthetic_model(s, b);
  EXPECT_EQ(test::read_file(a), test::read_file(b)) << "synth is not deterministic";

  auto m = Model::load(a);
  EXPECT_EQ(m->hparams().arch, s.hp.arch);
  EXPECT_EQ(m->hparams().n_vocab, 512);
  EXPECT_EQ(m->file().get_array("tokenizer.ggml.tokens")->array_size(), 512u);
  EXPECT_EQ(m->weights().layers[0].wq.type, s.weight_type);
  ReferenceForward f(*m, 32);
  std::vector<int32_t> ids = {1, 300, 400, 500};
  expect_finite_and_not_flat(f.eval(ids));
}

INSTANTIATE_TEST_SUITE_P(
    PresetsAndTypes, SynthRoundTrip,
    ::testing::Values(std::make_tuple("tiny-llama", "F32"), std::make_tuple("tiny-qwen2", "Q8_0"),
                      std::make_tuple("tiny-qwen3", "Q4_K"), std::make_tuple("tiny-llama", "Q6_K"),
                      std::make_tuple("tiny-qwen3", "F16"), std::make_tuple("tiny-qwen2", "BF16"),
                      std::make_tuple("tiny-llama", "Q4_0"), std::make_tuple("tiny-qwen3", "Q5_K")),
    [](const auto& info) {
      std::string n = std::get<0>(info.param) + "_" + std::get<1>(info.param);
      for (char& ch : n)
        if (ch == '-' || ch == '.') ch = '_';
      return n;
    });

TEST(Synth, RejectsUnknownVocabAndBadShapes) {
  SynthSpec s = *synth_preset("tiny-llama");
  EXPECT_THROW(write_synthetic_model(s, "/nonexistent/x.gguf"), Error);  // no vocab
  s.vocab_path = "/nonexistent/vocab.gguf";
  EXPECT_THROW(write_synthetic_model(s, "/tmp/x.gguf"), Error);
  EXPECT_FALSE(synth_preset("no-such-model").has_value());
  for (const std::string& name : synth_preset_names())
    EXPECT_TRUE(synth_preset(name).has_value()) << name;
}

// llama.cpp's Q4_K_M rule written out for an 8-block model: Q6_K for the output matrix
// (token_embd when tied) and for attn_v / ffn_down of blocks 0, 3, 6 and 7 (use_more_bits: the
// first and last eighth, then (i - 1) % 3 == 2), Q4_K for every other matrix.
TensorType expected_q4_k_m(const std::string& name, bool tied) {
  if (name == "output.weight" || (tied && name == "token_embd.weight")) return TensorType::Q6_K;
  for (int64_t l : {0, 3, 6, 7})
    if (name == layer_tensor(l, "attn_v.weight") || name == layer_tensor(l, "ffn_down.weight"))
      return TensorType::Q6_K;
  return TensorType::Q4_K;
}

class SynthQ4KM : public ::testing::TestWithParam<bool> {};

TEST_P(SynthQ4KM, FollowsLlamaCppRuleLoadsAndComputes) {
  HEARTH_SHARED_OR_SKIP(vocab, "models/stories260K.gguf");
  const bool tied = GetParam();
  TempDir dir;
  SynthSpec s = *synth_preset("tiny-qwen3");
  s.vocab_path = vocab;
  s.tied_output = tied;
  s.hp.n_embd = 256;  // K-quant rows are 256-element super-blocks
  s.hp.n_ff = 512;
  s.hp.head_dim = s.hp.n_rot = 64;
  s.hp.n_layer = 8;
  set_synth_type(s, "q4_k_m");
  EXPECT_EQ(synth_type_name(s), "Q4_K_M");
  const std::string path = dir.file("q4_k_m.gguf");
  write_synthetic_model(s, path);

  const gguf::File f = gguf::File::open(path);
  EXPECT_EQ(f.find_tensor("output.weight") == nullptr, tied);
  int matrices = 0, q6_k = 0;
  for (const gguf::TensorInfo& t : f.tensors()) {
    if (t.n_dims == 1) {
      EXPECT_EQ(t.type, TensorType::F32) << t.name;
      continue;
    }
    ++matrices;
    q6_k += t.type == TensorType::Q6_K;
    EXPECT_EQ(t.type, expected_q4_k_m(t.name, tied)) << t.name;
  }
  EXPECT_EQ(matrices, 8 * 7 + (tied ? 1 : 2));
  EXPECT_EQ(q6_k, 4 * 2 + 1);  // attn_v and ffn_down of 4 blocks, the output matrix

  auto m = Model::load(path);
  const ModelWeights& w = m->weights();
  EXPECT_EQ(w.output.type, TensorType::Q6_K);
  EXPECT_EQ(w.token_embd.type, tied ? TensorType::Q6_K : TensorType::Q4_K);
  EXPECT_EQ(w.layers[0].wv.type, TensorType::Q6_K);
  EXPECT_EQ(w.layers[3].w_down.type, TensorType::Q6_K);
  EXPECT_EQ(w.layers[1].wv.type, TensorType::Q4_K);
  EXPECT_EQ(w.layers[1].w_down.type, TensorType::Q4_K);
  EXPECT_EQ(w.layers[1].wq.type, TensorType::Q4_K);

  const std::vector<int32_t> ids = {1, 300, 400, 500};
  ReferenceForward r(*m, 32);
  const std::vector<float> ref = r.eval(ids);
  ops::ThreadPool pool(2);
  ForwardOptions fo;
  fo.n_ctx = 32;
  Forward fwd(*m, fo, pool);
  const std::vector<float> logits = fwd.eval(ids);
  ASSERT_EQ(logits.size(), ref.size());
  float lo = ref[0], hi = ref[0];
  for (size_t i = 0; i < ref.size(); ++i) {
    ASSERT_TRUE(std::isfinite(ref[i])) << i;
    ASSERT_TRUE(std::isfinite(logits[i])) << i;
    EXPECT_NEAR(logits[i], ref[i], 0.25) << i;  // activation quantization
    lo = std::min(lo, ref[i]);
    hi = std::max(hi, ref[i]);
  }
  EXPECT_GT(hi - lo, 0.1f) << "logits are flat: weights were not randomised";
}

INSTANTIATE_TEST_SUITE_P(TiedAndUntied, SynthQ4KM, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Tied" : "Untied"; });

TEST(Synth, TypeNamesAndMixtures) {
  SynthSpec s = *synth_preset("tiny-llama");
  set_synth_type(s, "Q4_K_M");
  EXPECT_EQ(s.mixture, SynthMixture::Q4_K_M);
  EXPECT_EQ(s.weight_type, TensorType::Q4_K);
  set_synth_type(s, "q8_0");  // a single type replaces the mixture
  EXPECT_EQ(s.mixture, SynthMixture::None);
  EXPECT_EQ(s.weight_type, TensorType::Q8_0);
  EXPECT_EQ(synth_type_name(s), "Q8_0");
  for (const char* bad : {"Q4_K_X", "", "IQ2_XXS", "Q4_K_S"}) {
    try {
      set_synth_type(s, bad);
      ADD_FAILURE() << "expected an Error for --type '" << bad << "'";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(std::string("'") + bad + "'"), std::string::npos) << what;
      EXPECT_NE(what.find("Q4_K_M"), std::string::npos) << what;
      EXPECT_NE(what.find("Q6_K"), std::string::npos) << what;
    }
    EXPECT_EQ(s.weight_type, TensorType::Q8_0) << "a rejected --type changed the spec";
  }
}

// The new architectures' tiny presets against the shared synthetic-arch file of the same
// architecture: the same metadata keys with the same value types (tokenizer.* and general.*
// aside), the layer kinds the loader derives from them, F32 routers and conv taps, negative
// DeltaNet decay rates, and a forward pass that computes.
struct ArchPreset {
  std::string preset, shared;  // tiny-<arch>, models/synthetic-arch/<shared>-F32.gguf
  std::vector<LayerKind> kinds;
};

std::map<std::string, gguf::ValueType> model_keys(const gguf::File& f) {
  std::map<std::string, gguf::ValueType> keys;
  for (const gguf::KeyValue& kv : f.metadata())
    if (!kv.key.starts_with("tokenizer.") && !kv.key.starts_with("general."))
      keys[kv.key] = kv.value.type == gguf::ValueType::ARRAY ? kv.value.elem_type : kv.value.type;
  return keys;
}

class SynthArchPreset : public ::testing::TestWithParam<ArchPreset> {};

TEST_P(SynthArchPreset, MatchesSharedFileKeysAndLoadsWithItsLayerKinds) {
  HEARTH_SHARED_OR_SKIP(vocab, "models/stories260K.gguf");
  const ArchPreset& a = GetParam();
  HEARTH_SHARED_OR_SKIP(shared, "models/synthetic-arch/" + a.shared + "-F32.gguf");
  TempDir dir;
  SynthSpec s = *synth_preset(a.preset);
  s.vocab_path = vocab;
  for (const char* type : {"F32", "Q4_K"}) {
    SCOPED_TRACE(type);
    set_synth_type(s, type);
    const std::string path = dir.file(std::string(type) + ".gguf");
    write_synthetic_model(s, path);
    auto m = Model::load(path);
    const HParams& hp = m->hparams();
    EXPECT_EQ(hp.arch_name, a.shared);
    EXPECT_EQ(hp.layer_kinds, a.kinds);
    EXPECT_EQ(model_keys(m->file()), model_keys(gguf::File::open(shared)));
    for (const gguf::TensorInfo& t : m->file().tensors()) {
      const bool stays_f32 = t.name.ends_with("ffn_gate_inp.weight") ||
                             t.name.ends_with("ssm_conv1d.weight") ||
                             t.name.ends_with("shortconv.conv.weight") || t.n_dims == 1;
      // Tiny rows of 16..128 values do not fit Q4_K's 256: llama-quantize's Q5_0 fallback.
      const TensorType want =
          std::string(type) == "F32" || stays_f32 ? TensorType::F32 : TensorType::Q5_0;
      EXPECT_EQ(t.type, want) << t.name;
    }
    for (const LayerWeights& L : m->weights().layers)
      for (float v : L.ssm_a) EXPECT_LT(v, 0.0f);

    ReferenceForward f(*m, 32);
    const std::vector<int32_t> ids = {1, 300, 400, 500, 20, 30, 40};
    expect_finite_and_not_flat(f.eval(ids));
  }
}

constexpr LayerKind kAttn = LayerKind::Attention, kSwa = LayerKind::SlidingWindow,
                    kDelta = LayerKind::DeltaNet, kConv = LayerKind::ShortConv;

INSTANTIATE_TEST_SUITE_P(
    TinyPresets, SynthArchPreset,
    ::testing::Values(ArchPreset{"tiny-qwen3moe", "qwen3moe", {kAttn, kAttn}},
                      ArchPreset{"tiny-gemma3", "gemma3", {kSwa, kSwa, kSwa, kSwa, kSwa, kAttn}},
                      ArchPreset{"tiny-qwen35", "qwen35", {kDelta, kDelta, kDelta, kAttn}},
                      ArchPreset{"tiny-qwen35moe", "qwen35moe", {kDelta, kDelta, kDelta, kAttn}},
                      ArchPreset{"tiny-lfm2", "lfm2", {kConv, kAttn, kConv, kAttn}}),
    [](const auto& info) { return info.param.shared; });

TEST(Synth, FallsBackLikeLlamaQuantizeWhenRowsDoNotFitTheBlock) {
  EXPECT_EQ(synth_fitting_type(TensorType::Q4_K, 768), TensorType::Q4_K);
  EXPECT_EQ(synth_fitting_type(TensorType::Q4_K, 64), TensorType::Q5_0);
  EXPECT_EQ(synth_fitting_type(TensorType::Q5_K, 1152), TensorType::Q5_1);
  EXPECT_EQ(synth_fitting_type(TensorType::Q6_K, 32), TensorType::Q8_0);
  EXPECT_EQ(synth_fitting_type(TensorType::Q4_K, 48), TensorType::F16);
  EXPECT_EQ(synth_fitting_type(TensorType::Q8_0, 64), TensorType::Q8_0);
  EXPECT_EQ(synth_fitting_type(TensorType::F32, 7), TensorType::F32);
}

// Bytes of a preset's weights at Q8_0 (tensor_specs; the vocabulary of Qwen3, 151,936 tokens).
double q8_0_gigabytes(const std::string& preset) {
  SynthSpec s = *synth_preset(preset);
  s.hp.n_vocab = 151936;
  double bytes = 0;
  for (const TensorSpec& t : tensor_specs(s.hp)) {
    if (t.name == "output.weight" && s.tied_output) continue;
    int64_t rows = 1;
    for (size_t i = 1; i < t.ne.size(); ++i) rows *= t.ne[i];
    const TensorType type = t.matrix ? TensorType::Q8_0 : TensorType::F32;
    bytes += static_cast<double>(row_bytes(type, t.ne[0])) * static_cast<double>(rows);
  }
  return bytes / 1e9;
}

// What the preset help says: the real Qwen3-30B-A3B shape does not fit a 24 GiB machine at
// Q8_0, the mini does.
TEST(Synth, MoePresetSizes) {
  const double real = q8_0_gigabytes("qwen3-30b-a3b"), mini = q8_0_gigabytes("qwen3moe-mini");
  std::cout << "[ measured ] Q8_0 weights: qwen3-30b-a3b " << real << " GB, qwen3moe-mini " << mini
            << " GB\n";
  EXPECT_GT(real, 30.0);
  EXPECT_LT(real, 34.0);
  EXPECT_LT(mini, 6.0);
  EXPECT_EQ(synth_preset("qwen3-30b-a3b")->hp.n_expert, 128);
  EXPECT_EQ(synth_preset("qwen3moe-mini")->hp.n_ff_exp, 768);
}

}  // namespace
}  // namespace hearth
