// Random-weight models with real shapes and real vocabularies, so tests and benchmarks can use
// realistic sizes without downloading anything (`hearth synth`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/hparams.h"
#include "quant/types.h"

namespace hearth {

// A mixture of types over a model's 2-D tensors, named like llama.cpp's file types.
// Q4_K_M: Q6_K for the output matrix (token_embd when tied) and for attn_v and ffn_down in the
// layers llama.cpp's use_more_bits picks (the first and last eighth, every third in between);
// Q4_K for every other 2-D tensor.
enum class SynthMixture : uint8_t { None, Q4_K_M };

struct SynthSpec {
  HParams hp;  // arch, shapes, rope, eps (n_vocab comes from the vocab)
  TensorType weight_type = TensorType::F32;   // every 2-D tensor (a mixture's base type); 1-D F32
  SynthMixture mixture = SynthMixture::None;  // or it picks each 2-D tensor's type
  bool tied_output = true;                    // false: write a separate output.weight
  bool rope_freqs = false;                    // llama only: llama3-style frequency divisors
  float llama3_factor = 8.0f, llama3_low = 1.0f, llama3_high = 4.0f;
  int64_t llama3_orig_ctx = 8192;
  // Which layers are which (hp.layer_kinds is derived from these when the file is written, so a
  // changed n_layer keeps the pattern): qwen35 makes every full_attention_interval-th layer full
  // attention, the rest Gated DeltaNet; lfm2's attention layers are listed, the rest short convs.
  // gemma3 uses llama.cpp's default pattern (5 sliding-window layers, then 1 global), as real
  // files do, which carry no pattern key.
  int64_t full_attention_interval = 4;
  std::vector<int64_t> lfm2_attention_layers;
  uint64_t seed = 42;
  std::string name;        // general.name
  std::string vocab_path;  // a GGUF whose tokenizer.* keys are copied
  int threads = 2;
};

// Named shapes of real models (weights random): qwen3-0.6b, qwen3-1.7b, qwen2.5-0.5b,
// llama-3.2-1b, smollm2-135m, qwen3-30b-a3b (the real MoE, ~32 GB at Q8_0) and qwen3moe-mini (its
// shapes with 12 layers of 64 experts, ~4.5 GB at Q8_0), gemma-3-1b, gemma-3-4b, qwen3.5-0.8b,
// qwen3.5-2b, lfm2-1.2b; and tiny-<arch> for tests (llama, qwen2, qwen3, qwen3moe, gemma3, qwen35,
// qwen35moe, lfm2). tools/synth_presets.cpp.
std::optional<SynthSpec> synth_preset(const std::string& name);
std::vector<std::string> synth_preset_names();

// Sets weight_type and mixture from a `--type` name (case-insensitive): a single type, F32,
// F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, or the mixture Q4_K_M. Throws an
// Error naming the accepted names otherwise.
void set_synth_type(SynthSpec& s, std::string_view name);
std::string synth_type_name(const SynthSpec& s);  // "Q4_K_M", or the single type's name

// The type a matrix with rows of `cols` values is written in when `wanted` cannot hold them:
// like llama-quantize, a K-quant whose 256-value super-block does not divide the row falls
// back to Q5_0 (Q4_K and below), Q5_1 (Q5_K) or Q8_0 (Q6_K); F16 if even that does not fit.
TensorType synth_fitting_type(TensorType wanted, int64_t cols);

// Writes the model; returns the number of bytes written. The same spec gives the same file.
uint64_t write_synthetic_model(const SynthSpec& spec, const std::string& out_path);

}  // namespace hearth
