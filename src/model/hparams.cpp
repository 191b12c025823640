#include "model/hparams.h"

#include <cmath>

#include "util/error.h"

namespace hearth {

const char* arch_name(Arch a) {
  switch (a) {
    case Arch::Llama:
      return "llama";
    case Arch::Qwen2:
      return "qwen2";
    case Arch::Qwen3:
      return "qwen3";
    case Arch::Qwen3Moe:
      return "qwen3moe";
    case Arch::Gemma3:
      return "gemma3";
    case Arch::Qwen35:
      return "qwen35";
    case Arch::Qwen35Moe:
      return "qwen35moe";
    case Arch::Lfm2:
      return "lfm2";
  }
  return "?";
}

Arch arch_from_name(const std::string& name, const std::string& file_name) {
  if (name == "llama") return Arch::Llama;
  if (name == "qwen2") return Arch::Qwen2;
  if (name == "qwen3") return Arch::Qwen3;
  if (name == "qwen3moe") return Arch::Qwen3Moe;
  if (name == "gemma3") return Arch::Gemma3;
  if (name == "qwen35") return Arch::Qwen35;
  if (name == "qwen35moe") return Arch::Qwen35Moe;
  if (name == "lfm2") return Arch::Lfm2;
  fail(
      "{}: unsupported architecture '{}' (supported: llama, qwen2, qwen3, qwen3moe, gemma3, "
      "qwen35, qwen35moe, lfm2)",
      file_name, name);
}

namespace {

int64_t require_int(const gguf::File& f, const std::string& key) {
  auto v = f.get_int(key);
  if (!v) fail("{}: missing metadata key '{}'", f.name(), key);
  return *v;
}

// attention.head_count_kv: one number, or (lfm2) one per layer where 0 marks a layer without
// attention. Returns the per-layer counts (n_layer entries).
std::vector<int64_t> head_count_kv(const gguf::File& f, const std::string& p, int64_t n_layer,
                                   int64_t n_head) {
  const std::string key = p + "attention.head_count_kv";
  const gguf::Value* v = f.find(key);
  if (v == nullptr || !v->is_array()) {
    return std::vector<int64_t>(static_cast<size_t>(n_layer), f.get_int(key).value_or(n_head));
  }
  if (static_cast<int64_t>(v->array_size()) != n_layer)
    fail("{}: '{}' has {} entries for {} layers", f.name(), key, v->array_size(), n_layer);
  if (v->ints.size() != v->array_size()) fail("{}: '{}' must hold integers", f.name(), key);
  return v->ints;
}

// The mixer of every layer, from the architecture's rule, and the KV arena index of the
// attention layers.
void assign_layer_kinds(HParams& hp, const gguf::File& f, const std::string& p,
                        const std::vector<int64_t>& kv_heads) {
  hp.layer_kinds.assign(static_cast<size_t>(hp.n_layer), LayerKind::Attention);
  for (int64_t l = 0; l < hp.n_layer; ++l) {
    LayerKind& k = hp.layer_kinds[static_cast<size_t>(l)];
    if (hp.arch == Arch::Gemma3) {
      // No pattern key in Gemma 3 files: 5 local layers then 1 global, as llama.cpp assumes.
      const int64_t period = f.get_int(p + "attention.sliding_window_pattern").value_or(6);
      if (period <= 0) fail("{}: attention.sliding_window_pattern must be positive", f.name());
      if (l % period < period - 1) k = LayerKind::SlidingWindow;
    } else if (hp.arch == Arch::Qwen35 || hp.arch == Arch::Qwen35Moe) {
      const int64_t every = f.get_int(p + "full_attention_interval").value_or(4);
      if (every <= 0) fail("{}: full_attention_interval must be positive", f.name());
      if ((l + 1) % every != 0) k = LayerKind::DeltaNet;
    } else if (hp.arch == Arch::Lfm2) {
      if (kv_heads[static_cast<size_t>(l)] == 0) k = LayerKind::ShortConv;
    }
  }
  hp.number_kv_layers();
}

void read_moe(HParams& hp, const gguf::File& f, const std::string& p) {
  hp.n_expert = f.get_int(p + "expert_count").value_or(0);
  if (hp.n_expert == 0) fail("{}: missing metadata key '{}expert_count'", f.name(), p);
  hp.n_expert_used = require_int(f, p + "expert_used_count");
  hp.n_ff_exp = require_int(f, p + "expert_feed_forward_length");
  hp.n_ff_shexp = f.get_int(p + "expert_shared_feed_forward_length").value_or(0);
  const int64_t gating = f.get_int(p + "expert_gating_func").value_or(1);
  if (gating != 1 && gating != 2)
    fail("{}: expert_gating_func {} is not supported (1 softmax, 2 sigmoid)", f.name(), gating);
  hp.expert_gating_sigmoid = gating == 2;
  hp.expert_weights_norm = f.get_bool(p + "expert_weights_norm").value_or(true);
  hp.expert_weights_scale =
      static_cast<float>(f.get_float(p + "expert_weights_scale").value_or(1.0));
}

// The per-architecture keys beyond the common transformer ones.
void read_arch_keys(HParams& hp, const gguf::File& f, const std::string& p) {
  if (hp.arch == Arch::Qwen3Moe || hp.arch == Arch::Qwen35Moe) read_moe(hp, f, p);
  if (hp.arch == Arch::Gemma3) {
    hp.n_swa = require_int(f, p + "attention.sliding_window");
    hp.rope_freq_base_swa =
        static_cast<float>(f.get_float(p + "rope.freq_base_swa").value_or(10000.0));
    hp.embd_scale = std::sqrt(static_cast<float>(hp.n_embd));
    hp.ffn_act = FfnAct::Gelu;
    hp.post_norms = true;
    if (f.find(p + "final_logit_softcapping") != nullptr)
      fail("{}: final_logit_softcapping is not supported", f.name());
  }
  if (hp.arch == Arch::Qwen35 || hp.arch == Arch::Qwen35Moe) {
    hp.ssm_conv_kernel = require_int(f, p + "ssm.conv_kernel");
    hp.ssm_head_dim = require_int(f, p + "ssm.state_size");
    hp.ssm_n_k_heads = require_int(f, p + "ssm.group_count");
    hp.ssm_n_v_heads = require_int(f, p + "ssm.time_step_rank");
    const int64_t inner = require_int(f, p + "ssm.inner_size");
    if (inner != hp.ssm_n_v_heads * hp.ssm_head_dim)
      fail("{}: ssm.inner_size {} != time_step_rank {} x state_size {}", f.name(), inner,
           hp.ssm_n_v_heads, hp.ssm_head_dim);
    hp.attn_output_gate = true;
  }
  if (hp.arch == Arch::Lfm2) hp.shortconv_l_cache = require_int(f, p + "shortconv.l_cache");
}

}  // namespace

bool HParams::has_recurrent_layers() const {
  for (int64_t l = 0; l < n_layer; ++l)
    if (is_recurrent(l)) return true;
  return false;
}

bool HParams::has_sliding_window() const {
  for (LayerKind k : layer_kinds)
    if (k == LayerKind::SlidingWindow) return true;
  return false;
}

int64_t HParams::n_kv_layers() const {
  int64_t n = 0;
  for (int64_t l = 0; l < n_layer; ++l) n += is_recurrent(l) ? 0 : 1;
  return n;
}

int64_t HParams::n_window_layers() const {
  int64_t n = 0;
  for (int64_t l = 0; l < n_layer; ++l) n += kind(l) == LayerKind::SlidingWindow ? 1 : 0;
  return n;
}

void HParams::number_kv_layers() {
  kv_index.assign(static_cast<size_t>(n_layer), -1);
  int32_t full = 0, window = 0;
  for (int64_t l = 0; l < n_layer; ++l) {
    if (is_recurrent(l)) continue;
    kv_index[static_cast<size_t>(l)] = kind(l) == LayerKind::SlidingWindow ? window++ : full++;
  }
}

int64_t HParams::recurrent_state_floats(int64_t layer) const {
  switch (kind(layer)) {
    case LayerKind::DeltaNet:
      return (ssm_conv_kernel - 1) * ssm_conv_channels() +
             ssm_n_v_heads * ssm_head_dim * ssm_head_dim;
    case LayerKind::ShortConv:
      return (shortconv_l_cache - 1) * n_embd;
    case LayerKind::Attention:
    case LayerKind::SlidingWindow:
      break;
  }
  return 0;
}

int64_t HParams::recurrent_state_floats() const {
  int64_t n = 0;
  for (int64_t l = 0; l < n_layer; ++l) n += recurrent_state_floats(l);
  return n;
}

namespace {

// The one KV head count of the attention layers (lfm2's 0 marks a layer without attention).
int64_t shared_kv_head_count(const std::vector<int64_t>& kv_heads, Arch arch,
                             const std::string& file) {
  int64_t shared = 0;
  for (int64_t n : kv_heads) {
    if (n == 0 && arch == Arch::Lfm2) continue;
    if (shared != 0 && n != shared)
      fail("{}: attention layers with different head_count_kv ({} and {}) are not supported", file,
           shared, n);
    shared = n;
  }
  return shared;
}

// head_dim (key and value length, which must agree) and the rotated dimensions.
void read_head_dims(HParams& hp, const gguf::File& f, const std::string& p) {
  if (hp.n_head <= 0) fail("{}: '{}attention.head_count' must be positive", f.name(), p);
  hp.head_dim = f.get_int(p + "attention.key_length").value_or(hp.n_embd / hp.n_head);
  if (auto vl = f.get_int(p + "attention.value_length"); vl && *vl != hp.head_dim)
    fail("{}: attention.value_length {} != key_length {} is not supported", f.name(), *vl,
         hp.head_dim);
  hp.n_rot = f.get_int(p + "rope.dimension_count").value_or(hp.head_dim);
}

// The vocabulary size: the arch key, else the tokenizer's token count, else the embedding's rows.
void read_vocab_size(HParams& hp, const gguf::File& f, const std::string& p) {
  if (auto n = f.get_int(p + "vocab_size")) {
    hp.n_vocab = *n;
  } else if (const gguf::Value* toks = f.get_array("tokenizer.ggml.tokens")) {
    hp.n_vocab = static_cast<int64_t>(toks->array_size());
  } else if (const gguf::TensorInfo* t = f.find_tensor("token_embd.weight")) {
    hp.n_vocab = t->ne[1];
  }
}

// rope.scaling.{type,factor} (or an older file's rope.scale_linear) and YaRN's parameters.
void read_rope_scaling(HParams& hp, const gguf::File& f, const std::string& p) {
  std::string scaling = f.get_string(p + "rope.scaling.type").value_or("none");
  double factor = f.get_float(p + "rope.scaling.factor").value_or(0.0);
  if (auto lin = f.get_float(p + "rope.scale_linear"); lin && factor == 0.0) {
    factor = *lin;  // older files
    if (scaling == "none") scaling = "linear";
  }
  if (scaling == "none") {
    hp.rope_scaling = RopeScaling::None;
  } else if (scaling == "linear") {
    hp.rope_scaling = RopeScaling::Linear;
  } else if (scaling == "yarn") {
    hp.rope_scaling = RopeScaling::Yarn;
    hp.yarn_ext_factor = 1.0f;
  } else {
    fail("{}: unsupported rope scaling type '{}' (supported: none, linear, yarn)", f.name(),
         scaling);
  }
  if (hp.rope_scaling != RopeScaling::None) {
    if (!(factor > 0.0)) factor = 1.0;
    hp.rope_freq_scale = static_cast<float>(1.0 / factor);
  }
  hp.rope_orig_ctx = f.get_int(p + "rope.scaling.original_context_length").value_or(hp.n_ctx_train);
  hp.yarn_attn_factor =
      static_cast<float>(f.get_float(p + "rope.scaling.attn_factor").value_or(1.0));
  hp.yarn_beta_fast =
      static_cast<float>(f.get_float(p + "rope.scaling.yarn_beta_fast").value_or(32.0));
  hp.yarn_beta_slow =
      static_cast<float>(f.get_float(p + "rope.scaling.yarn_beta_slow").value_or(1.0));
}

}  // namespace

HParams HParams::from_gguf(const gguf::File& f) {
  HParams hp;
  auto arch = f.get_string("general.architecture");
  if (!arch) fail("{}: missing metadata key 'general.architecture'", f.name());
  hp.arch_name = *arch;
  hp.arch = arch_from_name(*arch, f.name());
  const std::string p = *arch + ".";

  hp.n_embd = require_int(f, p + "embedding_length");
  hp.n_layer = require_int(f, p + "block_count");
  // MoE layers have no dense FFN (qwen35moe files carry no feed_forward_length).
  hp.n_ff = hp.arch == Arch::Qwen35Moe ? f.get_int(p + "feed_forward_length").value_or(0)
                                       : require_int(f, p + "feed_forward_length");
  hp.n_head = require_int(f, p + "attention.head_count");
  if (hp.n_layer <= 0 || hp.n_layer > 4096)
    fail("{}: block_count = {} is out of range (1..4096)", f.name(), hp.n_layer);
  const std::vector<int64_t> kv_heads = head_count_kv(f, p, hp.n_layer, hp.n_head);
  hp.n_head_kv = shared_kv_head_count(kv_heads, hp.arch, f.name());
  hp.n_ctx_train = f.get_int(p + "context_length").value_or(2048);
  read_head_dims(hp, f, p);
  hp.rms_eps = static_cast<float>(
      f.get_float(p + "attention.layer_norm_rms_epsilon")
          .value_or(hp.arch == Arch::Llama || hp.arch == Arch::Lfm2 ? 1e-5 : 1e-6));
  read_arch_keys(hp, f, p);
  assign_layer_kinds(hp, f, p, kv_heads);
  read_vocab_size(hp, f, p);

  hp.rope_layout = hp.arch == Arch::Llama ? RopeLayout::Interleaved : RopeLayout::Neox;
  hp.rope_freq_base = static_cast<float>(f.get_float(p + "rope.freq_base").value_or(10000.0));
  read_rope_scaling(hp, f, p);

  hp.validate(f.name());
  return hp;
}

void HParams::validate(const std::string& file) const {
  auto positive = [&](int64_t v, const char* what, int64_t max) {
    if (v <= 0 || v > max) fail("{}: {} = {} is out of range (1..{})", file, what, v, max);
  };
  positive(n_embd, "embedding_length", 1 << 17);
  positive(n_layer, "block_count", 4096);
  if (!is_moe() || n_ff != 0) positive(n_ff, "feed_forward_length", 1 << 20);
  if (is_moe()) {
    positive(n_expert, "expert_count", 4096);
    positive(n_expert_used, "expert_used_count", n_expert);
    positive(n_ff_exp, "expert_feed_forward_length", 1 << 20);
    if (n_ff_shexp < 0 || n_ff_shexp > (1 << 20))
      fail("{}: expert_shared_feed_forward_length = {} is out of range", file, n_ff_shexp);
  }
  if (has_sliding_window()) positive(n_swa, "attention.sliding_window", 1 << 24);
  if (ssm_conv_kernel != 0 || ssm_head_dim != 0) {
    positive(ssm_conv_kernel, "ssm.conv_kernel", 64);
    positive(ssm_head_dim, "ssm.state_size", 1024);
    positive(ssm_n_k_heads, "ssm.group_count", 1024);
    positive(ssm_n_v_heads, "ssm.time_step_rank", 4096);
    if (ssm_n_v_heads % ssm_n_k_heads != 0)
      fail("{}: ssm.time_step_rank {} is not a multiple of ssm.group_count {}", file, ssm_n_v_heads,
           ssm_n_k_heads);
  }
  if (arch == Arch::Lfm2) positive(shortconv_l_cache, "shortconv.l_cache", 64);
  if (!layer_kinds.empty() && static_cast<int64_t>(layer_kinds.size()) != n_layer)
    fail("{}: layer kinds do not cover the {} layers", file, n_layer);
  if (n_kv_layers() == 0) fail("{}: a model without attention layers is not supported", file);
  positive(n_head, "attention.head_count", 4096);
  positive(n_head_kv, "attention.head_count_kv", 4096);
  positive(head_dim, "attention.key_length", 4096);
  positive(n_vocab, "vocabulary size", 1 << 24);
  positive(n_ctx_train, "context_length", int64_t{1} << 31);
  if (n_head % n_head_kv != 0)
    fail("{}: head_count {} is not a multiple of head_count_kv {}", file, n_head, n_head_kv);
  if (n_rot <= 0 || n_rot > head_dim || n_rot % 2 != 0)
    fail("{}: rope.dimension_count {} must be even and in 2..{}", file, n_rot, head_dim);
  if (!(rms_eps > 0.0f) || !std::isfinite(rms_eps))
    fail("{}: layer_norm_rms_epsilon must be positive", file);
  if (!(rope_freq_base > 0.0f) || !std::isfinite(rope_freq_base))
    fail("{}: rope.freq_base must be positive", file);
  if (!(rope_freq_scale > 0.0f) || !std::isfinite(rope_freq_scale))
    fail("{}: rope scaling factor must be positive", file);
}

const char* layer_kind_name(LayerKind k) {
  switch (k) {
    case LayerKind::Attention:
      return "attention";
    case LayerKind::SlidingWindow:
      return "sliding-window";
    case LayerKind::DeltaNet:
      return "deltanet";
    case LayerKind::ShortConv:
      return "shortconv";
  }
  return "?";
}

// Runs of equal kinds: "attention:28", "sliding-window:5,attention:1,...".
std::string HParams::layer_kinds_string() const {
  std::string out;
  for (int64_t i = 0; i < n_layer;) {
    int64_t j = i;
    while (j < n_layer && kind(j) == kind(i)) ++j;
    out += fmt::format("{}{}:{}", out.empty() ? "" : ",", layer_kind_name(kind(i)), j - i);
    i = j;
  }
  return out;
}

std::string HParams::summary() const {
  static const char* kScaling[] = {"none", "linear", "yarn"};
  std::string s = fmt::format(
      "arch={} vocab={} ctx_train={} embd={} layers={} heads={} kv_heads={} head_dim={} ff={} "
      "rot={} rope={}(base={}, scaling={}, scale={}) eps={}",
      arch_name, n_vocab, n_ctx_train, n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff, n_rot,
      rope_layout == RopeLayout::Neox ? "neox" : "interleaved", rope_freq_base,
      kScaling[static_cast<int>(rope_scaling)], rope_freq_scale, rms_eps);
  if (is_moe())
    s += fmt::format(" experts={} used={} ff_exp={} ff_shexp={}", n_expert, n_expert_used, n_ff_exp,
                     n_ff_shexp);
  if (has_sliding_window()) s += fmt::format(" swa={} swa_base={}", n_swa, rope_freq_base_swa);
  s += " kinds=" + layer_kinds_string();
  return s;
}

}  // namespace hearth
