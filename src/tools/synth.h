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
  uint64_t seed = 42;
  std::string name;        // general.name
  std::string vocab_path;  // a GGUF whose tokenizer.* keys are copied
  int threads = 2;
};

// Named shapes of real models (weights random): qwen3-0.6b, qwen3-1.7b, qwen2.5-0.5b,
// llama-3.2-1b, smollm2-135m, and tiny-llama / tiny-qwen2 / tiny-qwen3 for tests.
std::optional<SynthSpec> synth_preset(const std::string& name);
std::vector<std::string> synth_preset_names();

// Sets weight_type and mixture from a `--type` name (case-insensitive): a single type, F32,
// F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, or the mixture Q4_K_M. Throws an
// Error naming the accepted names otherwise.
void set_synth_type(SynthSpec& s, std::string_view name);
std::string synth_type_name(const SynthSpec& s);  // "Q4_K_M", or the single type's name

// Writes the model; returns the number of bytes written. The same spec gives the same file.
uint64_t write_synthetic_model(const SynthSpec& spec, const std::string& out_path);

}  // namespace hearth
