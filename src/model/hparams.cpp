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
  }
  return "?";
}

Arch arch_from_name(const std::string& name, const std::string& file_name) {
  if (name == "llama") return Arch::Llama;
  if (name == "qwen2") return Arch::Qwen2;
  if (name == "qwen3") return Arch::Qwen3;
  fail("{}: unsupported architecture '{}' (supported: llama, qwen2, qwen3)", file_name, name);
}

namespace {

int64_t require_int(const gguf::File& f, const std::string& key) {
  auto v = f.get_int(key);
  if (!v) fail("{}: missing metadata key '{}'", f.name(), key);
  return *v;
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
  hp.n_ff = require_int(f, p + "feed_forward_length");
  hp.n_head = require_int(f, p + "attention.head_count");
  if (const gguf::Value* v = f.find(p + "attention.head_count_kv"); v && v->is_array())
    fail("{}: per-layer '{}attention.head_count_kv' is not supported", f.name(), p);
  hp.n_head_kv = f.get_int(p + "attention.head_count_kv").value_or(hp.n_head);
  hp.n_ctx_train = f.get_int(p + "context_length").value_or(2048);
  if (hp.n_head <= 0) fail("{}: '{}attention.head_count' must be positive", f.name(), p);
  hp.head_dim = f.get_int(p + "attention.key_length").value_or(hp.n_embd / hp.n_head);
  if (auto vl = f.get_int(p + "attention.value_length"); vl && *vl != hp.head_dim)
    fail("{}: attention.value_length {} != key_length {} is not supported", f.name(), *vl,
         hp.head_dim);
  hp.n_rot = f.get_int(p + "rope.dimension_count").value_or(hp.head_dim);
  hp.rms_eps = static_cast<float>(f.get_float(p + "attention.layer_norm_rms_epsilon")
                                      .value_or(hp.arch == Arch::Llama ? 1e-5 : 1e-6));

  if (auto n = f.get_int(p + "vocab_size")) {
    hp.n_vocab = *n;
  } else if (const gguf::Value* toks = f.get_array("tokenizer.ggml.tokens")) {
    hp.n_vocab = static_cast<int64_t>(toks->array_size());
  } else if (const gguf::TensorInfo* t = f.find_tensor("token_embd.weight")) {
    hp.n_vocab = t->ne[1];
  }

  hp.rope_layout = hp.arch == Arch::Llama ? RopeLayout::Interleaved : RopeLayout::Neox;
  hp.rope_freq_base = static_cast<float>(f.get_float(p + "rope.freq_base").value_or(10000.0));

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

  hp.validate(f.name());
  return hp;
}

void HParams::validate(const std::string& file) const {
  auto positive = [&](int64_t v, const char* what, int64_t max) {
    if (v <= 0 || v > max) fail("{}: {} = {} is out of range (1..{})", file, what, v, max);
  };
  positive(n_embd, "embedding_length", 1 << 17);
  positive(n_layer, "block_count", 4096);
  positive(n_ff, "feed_forward_length", 1 << 20);
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

std::string HParams::summary() const {
  static const char* kScaling[] = {"none", "linear", "yarn"};
  return fmt::format(
      "arch={} vocab={} ctx_train={} embd={} layers={} heads={} kv_heads={} head_dim={} ff={} "
      "rot={} rope={}(base={}, scaling={}, scale={}) eps={}",
      arch_name, n_vocab, n_ctx_train, n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff, n_rot,
      rope_layout == RopeLayout::Neox ? "neox" : "interleaved", rope_freq_base,
      kScaling[static_cast<int>(rope_scaling)], rope_freq_scale, rms_eps);
}

}  // namespace hearth
