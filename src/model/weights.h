// Weights bound to a loaded GGUF file. Matrices stay in the memory mapping in their stored type
// (no f32 copies); small 1-D vectors (norms, biases, rope frequency factors) are widened to f32.
// When the AVX2 kernels are in use, Q8_0/Q4_0 matrices are repacked (ops/packed_rows.h) into memory
// of the same size that replaces their mapped pages for the matmul (HEARTH_REPACK=0: off).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gguf/reader.h"
#include "model/hparams.h"
#include "ops/matrix.h"
#include "ops/reference.h"
#include "quant/types.h"
#include "util/anonymous_memory.h"

namespace hearth {

struct LayerWeights {
  std::vector<float> attn_norm, ffn_norm;
  MatrixView wq, wk, wv, wo, w_gate, w_up, w_down;
  std::vector<float> bq, bk, bv;      // qwen2 only (empty otherwise)
  std::vector<float> q_norm, k_norm;  // qwen3 only (empty otherwise)
};

struct ModelWeights {
  MatrixView token_embd;
  MatrixView output;  // output.weight, or token_embd when the file has none (tied)
  bool tied_output = false;
  std::vector<float> output_norm;
  std::vector<float> rope_freqs;  // per-pair frequency divisors (llama3-style); empty if absent
  std::vector<LayerWeights> layers;
};

class Model {
 public:
  // Maps and validates the file: unsupported architecture, missing tensor, wrong shape or a
  // type without a dequantizer are Errors naming the file and tensor.
  static std::unique_ptr<Model> load(const std::string& path);
  static std::unique_ptr<Model> from_file(gguf::File file);

  const gguf::File& file() const { return file_; }
  const HParams& hparams() const { return hp_; }
  const ModelWeights& weights() const { return w_; }
  uint64_t weight_bytes() const;  // bytes of all tensors as stored
  // RoPE parameters from the hyperparameters and rope_freqs (points into this model).
  ref::RopeConfig rope_config() const;
  // Whether a prefix of a sequence's state can be reused and extended (true for attention-only
  // models: K/V of position p depends on tokens [0, p] alone). A model with recurrent layers
  // would say false, and the prefix cache then stays off for it.
  bool supports_prefix_reuse() const { return true; }

 private:
  explicit Model(gguf::File f) : file_(std::move(f)) {}
  void bind();
  void repack();

  gguf::File file_;
  HParams hp_;
  ModelWeights w_;
  AnonymousMemory packed_;  // the repacked matrices, one allocation
};

}  // namespace hearth
