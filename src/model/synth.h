// Random-weight models with real shapes and real vocabularies, so tests and benchmarks can use
// realistic sizes without downloading anything (`hearth synth`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/hparams.h"
#include "quant/types.h"

namespace hearth {

struct SynthSpec {
  HParams hp;  // arch, shapes, rope, eps (n_vocab comes from the vocab)
  TensorType weight_type = TensorType::F32;  // every 2-D tensor; 1-D tensors stay F32
  bool tied_output = true;                   // false: write a separate output.weight
  bool rope_freqs = false;                   // llama only: llama3-style frequency divisors
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

// Writes the model; returns the number of bytes written. The same spec gives the same file.
uint64_t write_synthetic_model(const SynthSpec& spec, const std::string& out_path);

}  // namespace hearth
