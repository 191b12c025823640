// Model hyperparameters read from GGUF metadata (`<arch>.*` keys) for the supported
// architectures: llama (Llama 2/3, Mistral, TinyLlama, SmolLM), qwen2, qwen3, qwen3moe
// (Mixture-of-Experts), gemma3 (sliding-window + global attention), qwen35 / qwen35moe (Gated
// DeltaNet + gated attention hybrids) and lfm2 (short convolutions + attention).
// The keys and tensor layouts are those of the files llama.cpp's converters write.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gguf/reader.h"

namespace hearth {

enum class Arch { Llama, Qwen2, Qwen3, Qwen3Moe, Gemma3, Qwen35, Qwen35Moe, Lfm2 };

// What a layer's token mixer is. Attention layers keep K/V per position (the KV arena holds
// only theirs); DeltaNet and ShortConv layers keep a fixed-size recurrent state per sequence.
enum class LayerKind {
  Attention,      // causal attention over every earlier position
  SlidingWindow,  // causal attention over the last n_swa positions (the query's own included)
  DeltaNet,       // Gated DeltaNet linear attention (qwen35): short conv + delta-rule state
  ShortConv,      // LFM2's gated short convolution
};

// How the feed-forward block mixes its gate: SwiGLU (silu) or Gemma's GeGLU (tanh GELU).
enum class FfnAct { Silu, Gelu };

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

  // Per layer (n_layer entries): the mixer kind, and for KV layers their index in their KV arena
  // (-1 for recurrent layers): full-attention layers are numbered among themselves in the main
  // arena, sliding-window layers among themselves in the window arena (KvArena::window), which
  // holds only what their windows still see. Both empty: every layer is full attention
  // (hand-built HParams); read them through kind() and kv_layer(); number_kv_layers() fills
  // kv_index from layer_kinds.
  std::vector<LayerKind> layer_kinds;
  std::vector<int32_t> kv_index;
  LayerKind kind(int64_t layer) const {
    return layer_kinds.empty() ? LayerKind::Attention : layer_kinds[static_cast<size_t>(layer)];
  }
  int64_t kv_layer(int64_t layer) const {
    return kv_index.empty() ? layer : kv_index[static_cast<size_t>(layer)];
  }

  // Mixture of experts (qwen3moe, qwen35moe): n_expert > 0. The router is a softmax over the
  // experts, the top n_expert_used are renormalised to sum to 1; qwen35moe adds a shared expert
  // (n_ff_shexp wide) scaled by sigmoid(h . gate_inp_shexp).
  int64_t n_expert = 0, n_expert_used = 0, n_ff_exp = 0, n_ff_shexp = 0;
  bool expert_gating_sigmoid = false;  // expert_gating_func 2; softmax (1) otherwise
  bool expert_weights_norm = true;     // renormalise the top-k weights
  float expert_weights_scale = 1.0f;

  // gemma3: sliding-window layers (window n_swa, own rope base), the embedding scaled by
  // sqrt(n_embd), GeGLU, a norm after attention and after the FFN ("sandwich").
  int64_t n_swa = 0;
  float rope_freq_base_swa = 10000.0f;
  float embd_scale = 1.0f;
  FfnAct ffn_act = FfnAct::Silu;
  bool post_norms = false;  // post_attention_norm / post_ffw_norm after each sublayer

  // qwen35 / qwen35moe: Gated DeltaNet layers. The attention layers' q projection also yields a
  // per-head output gate (attn_output_gate), and their norm before the FFN is named
  // post_attention_norm.
  int64_t ssm_conv_kernel = 0;  // K: the short conv's taps (state keeps K-1 rows)
  int64_t ssm_head_dim = 0;     // dk = dv (ssm.state_size)
  int64_t ssm_n_k_heads = 0;    // nk (ssm.group_count)
  int64_t ssm_n_v_heads = 0;    // nv (ssm.time_step_rank); value head j uses key head j % nk
  bool attn_output_gate = false;

  // lfm2: short-conv layers (l_cache taps; state keeps l_cache-1 rows of n_embd).
  int64_t shortconv_l_cache = 0;

  bool has_qkv_bias() const { return arch == Arch::Qwen2; }
  bool has_qk_norm() const { return arch != Arch::Llama && arch != Arch::Qwen2; }
  bool is_moe() const { return n_expert > 0; }
  bool is_recurrent(int64_t layer) const {
    const LayerKind k = kind(layer);
    return k == LayerKind::DeltaNet || k == LayerKind::ShortConv;
  }
  bool has_recurrent_layers() const;
  bool has_sliding_window() const;
  int64_t n_kv_layers() const;      // layers with K/V (attention and sliding window)
  int64_t n_window_layers() const;  // sliding-window layers (the window arena's layers)
  int64_t n_full_attention_layers() const { return n_kv_layers() - n_window_layers(); }
  void number_kv_layers();  // kv_index from layer_kinds (see above)
  int64_t q_dim() const { return n_head * head_dim; }
  int64_t kv_dim() const { return n_head_kv * head_dim; }
  // DeltaNet: channels of the qkv projection / conv (q and k: nk heads, v: nv heads).
  int64_t ssm_conv_channels() const { return (2 * ssm_n_k_heads + ssm_n_v_heads) * ssm_head_dim; }
  int64_t ssm_inner() const { return ssm_n_v_heads * ssm_head_dim; }
  // f32 values of one sequence's recurrent state in `layer` (0 for KV layers), and over all.
  int64_t recurrent_state_floats(int64_t layer) const;
  int64_t recurrent_state_floats() const;

  // Reads and validates; an unsupported architecture or a missing/absurd value is an Error
  // naming the file and the key.
  static HParams from_gguf(const gguf::File& f);
  void validate(const std::string& file_name) const;
  std::string summary() const;
  std::string layer_kinds_string() const;  // runs of equal kinds: "deltanet:3,attention:1"
};

const char* layer_kind_name(LayerKind k);

Arch arch_from_name(const std::string& name, const std::string& file_name);
const char* arch_name(Arch a);

}  // namespace hearth
