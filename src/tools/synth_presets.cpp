// `hearth synth`'s named shapes. The real ones follow the models' published configurations
// (hidden size, layers, heads, FFN widths, rope bases, layer patterns); the tiny ones exist for
// tests. The vocabulary always comes from the --vocab file.
#include <cmath>

#include "tools/synth.h"

namespace hearth {
namespace {

SynthSpec make(Arch arch, int64_t embd, int64_t layers, int64_t heads, int64_t kv_heads,
               int64_t head_dim, int64_t ff, float rope_base, float eps, int64_t ctx) {
  SynthSpec s;
  HParams& hp = s.hp;
  hp.arch = arch;
  hp.arch_name = arch_name(arch);
  hp.n_embd = embd;
  hp.n_layer = layers;
  hp.n_head = heads;
  hp.n_head_kv = kv_heads;
  hp.head_dim = head_dim;
  hp.n_rot = head_dim;
  hp.n_ff = ff;
  hp.rope_freq_base = rope_base;
  hp.rms_eps = eps;
  hp.n_ctx_train = ctx;
  hp.rope_layout = arch == Arch::Llama ? RopeLayout::Interleaved : RopeLayout::Neox;
  return s;
}

void set_moe(SynthSpec& s, int64_t experts, int64_t used, int64_t ff_exp, int64_t ff_shexp) {
  s.hp.n_expert = experts;
  s.hp.n_expert_used = used;
  s.hp.n_ff_exp = ff_exp;
  s.hp.n_ff_shexp = ff_shexp;
}

SynthSpec gemma3(int64_t embd, int64_t layers, int64_t heads, int64_t kv_heads, int64_t head_dim,
                 int64_t ff, int64_t window, int64_t ctx) {
  SynthSpec s = make(Arch::Gemma3, embd, layers, heads, kv_heads, head_dim, ff, 1e6f, 1e-6f, ctx);
  s.hp.n_swa = window;
  s.hp.rope_freq_base_swa = 1e4f;
  s.hp.embd_scale = std::sqrt(static_cast<float>(embd));
  s.hp.ffn_act = FfnAct::Gelu;
  s.hp.post_norms = true;
  return s;
}

// Qwen3.5: rope on a quarter of each attention head; DeltaNet heads of ssm_head dims.
SynthSpec qwen35(Arch arch, int64_t embd, int64_t layers, int64_t heads, int64_t kv_heads,
                 int64_t head_dim, int64_t ff, int64_t ssm_head, int64_t nk, int64_t nv,
                 int64_t ctx) {
  SynthSpec s = make(arch, embd, layers, heads, kv_heads, head_dim, ff, 1e7f, 1e-6f, ctx);
  s.hp.n_rot = head_dim / 4;
  s.hp.ssm_conv_kernel = 4;
  s.hp.ssm_head_dim = ssm_head;
  s.hp.ssm_n_k_heads = nk;
  s.hp.ssm_n_v_heads = nv;
  s.hp.attn_output_gate = true;
  s.full_attention_interval = 4;
  return s;
}

SynthSpec lfm2(int64_t embd, int64_t layers, int64_t heads, int64_t kv_heads, int64_t ff,
               std::vector<int64_t> attention_layers, int64_t ctx) {
  SynthSpec s = make(Arch::Lfm2, embd, layers, heads, kv_heads, embd / heads, ff, 1e6f, 1e-5f, ctx);
  s.hp.shortconv_l_cache = 3;
  s.lfm2_attention_layers = std::move(attention_layers);
  return s;
}

std::optional<SynthSpec> dense_preset(const std::string& name) {
  if (name == "qwen3-0.6b")
    return make(Arch::Qwen3, 1024, 28, 16, 8, 128, 3072, 1e6f, 1e-6f, 40960);
  if (name == "qwen3-1.7b")
    return make(Arch::Qwen3, 2048, 28, 16, 8, 128, 6144, 1e6f, 1e-6f, 40960);
  if (name == "qwen2.5-0.5b")
    return make(Arch::Qwen2, 896, 24, 14, 2, 64, 4864, 1e6f, 1e-6f, 32768);
  if (name == "llama-3.2-1b") {
    SynthSpec s = make(Arch::Llama, 2048, 16, 32, 8, 64, 8192, 500000.0f, 1e-5f, 131072);
    s.rope_freqs = true;
    s.llama3_factor = 32.0f;
    return s;
  }
  if (name == "smollm2-135m")
    return make(Arch::Llama, 576, 30, 9, 3, 64, 1536, 100000.0f, 1e-5f, 8192);
  if (name == "tiny-llama") {
    SynthSpec s = make(Arch::Llama, 64, 2, 4, 2, 16, 128, 10000.0f, 1e-5f, 512);
    s.tied_output = false;
    return s;
  }
  if (name == "tiny-qwen2") return make(Arch::Qwen2, 64, 2, 4, 2, 16, 128, 1e6f, 1e-6f, 512);
  if (name == "tiny-qwen3") return make(Arch::Qwen3, 64, 2, 4, 2, 32, 128, 1e6f, 1e-6f, 512);
  return std::nullopt;
}

std::optional<SynthSpec> moe_preset(const std::string& name) {
  if (name == "qwen3-30b-a3b" || name == "qwen3moe-mini") {
    // Qwen3-30B-A3B: 48 layers of 128 experts (top 8, 768 wide), untied output. About 30.5 B
    // parameters: ~32 GB at Q8_0, ~17 GB at Q4_K. The mini keeps every per-expert and attention
    // shape and top-8 routing but has 12 layers of 64 experts (~4.2 B parameters, ~4.5 GB at
    // Q8_0), so that it fits a 24 GiB machine.
    const bool real = name == "qwen3-30b-a3b";
    SynthSpec s = make(Arch::Qwen3Moe, 2048, real ? 48 : 12, 32, 4, 128, 6144, 1e6f, 1e-6f, 40960);
    set_moe(s, real ? 128 : 64, 8, 768, 0);
    s.tied_output = false;
    return s;
  }
  if (name == "tiny-qwen3moe") {
    SynthSpec s = make(Arch::Qwen3Moe, 64, 2, 4, 2, 16, 128, 1e6f, 1e-6f, 512);
    set_moe(s, 8, 2, 32, 0);
    return s;
  }
  if (name == "qwen3.5moe-mini") {
    // A scaled hybrid MoE for benchmarks, not a released model: Qwen3.5-2B's backbone (24
    // layers, 3 Gated DeltaNet : 1 gated attention) with fine-grained experts in the manner of
    // Qwen3.5-35B-A3B (routed top 8 + 1 shared, 512 wide), 64 per layer (~5.8 GB at Q8_0).
    SynthSpec s = qwen35(Arch::Qwen35Moe, 2048, 24, 8, 2, 256, 0, 128, 16, 16, 262144);
    set_moe(s, 64, 8, 512, 512);
    return s;
  }
  if (name == "tiny-qwen35moe") {
    SynthSpec s = qwen35(Arch::Qwen35Moe, 64, 4, 4, 2, 32, 0, 16, 2, 4, 512);
    set_moe(s, 8, 2, 32, 64);
    return s;
  }
  return std::nullopt;
}

std::optional<SynthSpec> hybrid_preset(const std::string& name) {
  if (name == "gemma-3-1b") return gemma3(1152, 26, 4, 1, 256, 6912, 512, 32768);
  if (name == "gemma-3-4b") return gemma3(2560, 34, 8, 4, 256, 10240, 1024, 131072);
  if (name == "tiny-gemma3") return gemma3(64, 6, 4, 2, 16, 128, 4, 512);
  if (name == "qwen3.5-0.8b")
    return qwen35(Arch::Qwen35, 1024, 24, 8, 2, 256, 3584, 128, 16, 16, 262144);
  if (name == "qwen3.5-2b")
    return qwen35(Arch::Qwen35, 2048, 24, 8, 2, 256, 6144, 128, 16, 16, 262144);
  if (name == "tiny-qwen35") return qwen35(Arch::Qwen35, 64, 4, 4, 2, 32, 128, 16, 2, 4, 512);
  // LFM2-1.2B: 16 layers, attention at 2, 5, 8, 10, 12, 14 and short convs elsewhere.
  if (name == "lfm2-1.2b") return lfm2(2048, 16, 32, 8, 8192, {2, 5, 8, 10, 12, 14}, 128000);
  if (name == "tiny-lfm2") return lfm2(64, 4, 4, 2, 128, {1, 3}, 512);
  return std::nullopt;
}

}  // namespace

std::vector<std::string> synth_preset_names() {
  return {"qwen3-0.6b",      "qwen3-1.7b",    "qwen2.5-0.5b", "llama-3.2-1b", "smollm2-135m",
          "qwen3-30b-a3b",   "qwen3moe-mini", "gemma-3-1b",   "gemma-3-4b",   "qwen3.5-0.8b",
          "qwen3.5moe-mini", "qwen3.5-2b",    "lfm2-1.2b",    "tiny-llama",   "tiny-qwen2",
          "tiny-qwen3",      "tiny-qwen3moe", "tiny-gemma3",  "tiny-qwen35",  "tiny-qwen35moe",
          "tiny-lfm2"};
}

std::optional<SynthSpec> synth_preset(const std::string& name) {
  std::optional<SynthSpec> s = dense_preset(name);
  if (!s) s = moe_preset(name);
  if (!s) s = hybrid_preset(name);
  if (s) s->name = name + "-synthetic";
  return s;
}

}  // namespace hearth
