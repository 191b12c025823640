// Model hyperparameters read from GGUF metadata (`<arch>.*` keys) for the supported
// architectures: llama (Llama 2/3, Mistral, TinyLlama, SmolLM), qwen2 and qwen3.
#pragma once

#include <cstdint>
#include <string>

#include "gguf/reader.h"

namespace hearth {

enum class Arch { Llama, Qwen2, Qwen3 };

// Which dimensions RoPE rotates together: llama's adjacent pairs (x[2i], x[2i+1]) or the
// GPT-NeoX halves (x[i], x[i + n_rot/2]) used by qwen2/qwen3.
enum class RopeLayout { Interleaved, Neox };
enum class RopeScaling { None, Linear, Yarn };

struct HParams {
  Arch arch = Arch::Llama;
  std::string arch_name;
  int64_t n_vocab = 0;
  int64_t n_ctx_train = 0;
  int64_t n_embd = 0;
  int64_t n_layer = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;  // key/query width per head (may differ from n_embd / n_head)
  int64_t n_ff = 0;
  int64_t n_rot = 0;  // rotated dimensions per head (<= head_dim)
  float rms_eps = 1e-5f;

  RopeLayout rope_layout = RopeLayout::Interleaved;
  float rope_freq_base = 10000.0f;
  RopeScaling rope_scaling = RopeScaling::None;
  float rope_freq_scale = 1.0f;  // 1 / scaling factor
  int64_t rope_orig_ctx = 0;     // YaRN: original training context
  float yarn_ext_factor = 0.0f;  // 1 for YaRN, 0 otherwise
  float yarn_attn_factor = 1.0f;
  float yarn_beta_fast = 32.0f;
  float yarn_beta_slow = 1.0f;

  bool has_qkv_bias() const { return arch == Arch::Qwen2; }
  bool has_qk_norm() const { return arch == Arch::Qwen3; }
  int64_t q_dim() const { return n_head * head_dim; }
  int64_t kv_dim() const { return n_head_kv * head_dim; }

  // Reads and validates; an unsupported architecture or a missing/absurd value is an Error
  // naming the file and the key.
  static HParams from_gguf(const gguf::File& f);
  void validate(const std::string& file_name) const;
  std::string summary() const;
};

Arch arch_from_name(const std::string& name, const std::string& file_name);
const char* arch_name(Arch a);

}  // namespace hearth
