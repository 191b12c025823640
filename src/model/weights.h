// Weights bound to a loaded GGUF file. Matrices stay in the memory mapping in their stored type
// (no f32 copies); small 1-D vectors (norms, biases, rope frequency factors) are widened to f32.
// When the AVX2 kernels are in use, every matrix moves into huge pages that replace its mapped
// pages for the matmul: Q8_0/Q4_0/Q5_0/Q4_K/Q6_K repacked (ops/packed_rows.h), the other types
// as stored (HEARTH_REPACK=0: off).
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

// One layer's weights. Which members are bound depends on the layer's kind and the FFN
// (hparams.h): an unused MatrixView has no data, an unused vector is empty.
struct LayerWeights {
  std::vector<float> attn_norm, ffn_norm;  // ffn_norm: qwen35's post_attention_norm
  // Attention and sliding-window layers. wq has 2 x q_dim rows with an output gate (qwen35:
  // head j's query then its gate, head after head).
  MatrixView wq, wk, wv, wo;
  std::vector<float> bq, bk, bv;      // qwen2 only (empty otherwise)
  std::vector<float> q_norm, k_norm;  // per-head q/k RMSNorm (qwen3 and later)
  // gemma3's sandwich norms, applied to each sublayer's output before the residual add.
  std::vector<float> post_attn_norm, post_ffw_norm;

  // Dense FFN.
  MatrixView w_gate, w_up, w_down;
  // Mixture of experts: the router (F32, n_expert rows), then one view per expert into the 3-D
  // tensors; qwen35moe's shared expert and its scalar gate.
  MatrixView router;
  std::vector<MatrixView> gate_exps, up_exps, down_exps;
  MatrixView gate_shexp, up_shexp, down_shexp;
  std::vector<float> gate_inp_shexp;

  // Gated DeltaNet (qwen35). conv: channels x K taps (tap K-1 multiplies the current token).
  MatrixView ssm_qkv, ssm_gate, ssm_beta, ssm_alpha, ssm_out;
  std::vector<float> ssm_conv, ssm_dt_bias, ssm_a, ssm_norm;

  // LFM2 short conv. conv: n_embd x l_cache taps.
  MatrixView conv_in, conv_out;
  std::vector<float> conv;

  // Every bound matrix, for repacking and byte counts.
  std::vector<MatrixView*> matrices();
  std::vector<const MatrixView*> matrices() const;
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
  // RoPE of the sliding-window layers (gemma3's own base); rope_config() otherwise.
  ref::RopeConfig rope_config_swa() const;
  // Whether a prefix of a sequence's state can be reused and extended: K/V of position p
  // depends on tokens [0, p] alone. Recurrent layers need a state snapshot at the prefix's end
  // as well (kv/ keeps those); without one the prefix cache stays off for them.
  bool supports_prefix_reuse() const { return true; }

 private:
  explicit Model(gguf::File f) : file_(std::move(f)) {}
  void bind();
  void move_to_huge_pages();

  gguf::File file_;
  HParams hp_;
  ModelWeights w_;
  AnonymousMemory packed_;  // the matrices' huge-page homes (repacked or copied), one allocation
};

}  // namespace hearth
