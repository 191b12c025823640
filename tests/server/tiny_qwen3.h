// A tiny random Qwen3 with the real Qwen3 vocabulary, for server tests that need real tokens
// (and, with a template, the real chat format) at little cost.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

#include "common/shared_data.h"
#include "tools/synth.h"

namespace hearth::test {

// Writes it (Q8_0) to a temporary file named by `tag` and the process, and returns the path; the
// caller loads it and removes the file (the model stays mapped). Needs
// tokenizers/vocab-qwen3.gguf.
inline std::string write_tiny_qwen3(const std::string& tag) {
  SynthSpec spec = *synth_preset("tiny-qwen3");
  spec.vocab_path = shared_path("tokenizers/vocab-qwen3.gguf");
  spec.weight_type = TensorType::Q8_0;
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("hearth-server-" + tag + "-" + std::to_string(::getpid()) + ".gguf"))
                               .string();
  write_synthetic_model(spec, path);
  return path;
}

}  // namespace hearth::test
