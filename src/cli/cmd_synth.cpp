// `hearth synth`: write a random-weight model with a real shape and vocabulary.
#include <fmt/format.h>

#include "cli/commands.h"
#include "tools/synth.h"
#include "util/error.h"

namespace hearth::cli {
namespace {

struct SynthOptions {
  std::string preset;
  std::string arch;
  std::string out;
  std::string vocab;
  std::string type = "F32";
  int64_t n_embd = 0, n_layer = 0, n_head = 0, n_head_kv = 0, head_dim = 0, n_ff = 0, ctx = 0;
  float rope_base = 0.0f;
  bool untied = false;
  uint64_t seed = 42;
  int threads = 2;
};

int synth(const SynthOptions& o) {
  SynthSpec s;
  if (!o.preset.empty()) {
    auto p = synth_preset(o.preset);
    if (!p)
      fail("unknown preset '{}' (known: {})", o.preset, fmt::join(synth_preset_names(), ", "));
    s = *p;
  } else {
    if (o.arch.empty())
      fail(
          "give --preset or --arch (llama, qwen2, qwen3, qwen3moe, gemma3, qwen35, qwen35moe, "
          "lfm2) with the shape options");
    // Start from the tiny shape of that architecture; the options below resize it.
    s = *synth_preset(std::string("tiny-") + arch_name(arch_from_name(o.arch, "synth")));
    s.name = o.arch + "-synthetic";
  }
  HParams& hp = s.hp;
  if (o.n_embd) hp.n_embd = o.n_embd;
  if (o.n_layer) hp.n_layer = o.n_layer;
  if (o.n_head) hp.n_head = o.n_head;
  if (o.n_head_kv) hp.n_head_kv = o.n_head_kv;
  if (o.head_dim) {
    // Keep a partial rope's fraction (qwen35 rotates a quarter of each head).
    hp.n_rot = hp.n_rot == hp.head_dim ? o.head_dim : o.head_dim * hp.n_rot / hp.head_dim;
    hp.head_dim = o.head_dim;
  }
  if (o.n_ff) hp.n_ff = o.n_ff;
  if (o.ctx) hp.n_ctx_train = o.ctx;
  if (o.rope_base > 0) hp.rope_freq_base = o.rope_base;
  if (o.untied) s.tied_output = false;
  set_synth_type(s, o.type);
  s.vocab_path = o.vocab;
  s.seed = o.seed;
  s.threads = o.threads;
  const uint64_t bytes = write_synthetic_model(s, o.out);
  fmt::print(stderr, "hearth: wrote {} ({:.1f} MiB, {} {}, {} layers, embd {})\n", o.out,
             static_cast<double>(bytes) / (1 << 20), hp.arch_name, synth_type_name(s), hp.n_layer,
             hp.n_embd);
  return 0;
}

}  // namespace

void add_synth(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<SynthOptions>();
  CLI::App* cmd =
      app.add_subcommand("synth", "Write a random-weight model with a real shape and vocabulary");
  cmd->add_option(
      "--preset", o->preset,
      "Shape of a real model: " + fmt::format("{}", fmt::join(synth_preset_names(), ", ")) +
          ". qwen3-30b-a3b is the real Qwen3-30B-A3B (~32 GB at Q8_0, ~17 GB at Q4_K); "
          "qwen3moe-mini keeps its expert and attention shapes with 12 layers of 64 "
          "experts (~4.5 GB at Q8_0). tiny-* are for tests");
  cmd->add_option("--arch", o->arch,
                  "Architecture without a preset (starts from its tiny-* shape): llama, qwen2, "
                  "qwen3, qwen3moe, gemma3, qwen35, qwen35moe, lfm2");
  cmd->add_option("-o,--out", o->out, "Output GGUF path")->required();
  cmd->add_option("--vocab", o->vocab, "GGUF whose tokenizer is copied (e.g. a vocab-only GGUF)")
      ->required();
  cmd->add_option("--type", o->type,
                  "Type of every 2-D tensor (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, "
                  "Q5_K, Q6_K), or the mixture Q4_K_M (llama.cpp's rule: Q6_K for the output "
                  "matrix and for attn_v/ffn_down in some layers, Q4_K elsewhere)")
      ->capture_default_str();
  cmd->add_option("--n-embd", o->n_embd, "Embedding width");
  cmd->add_option("--n-layer", o->n_layer, "Blocks");
  cmd->add_option("--n-head", o->n_head, "Query heads");
  cmd->add_option("--n-head-kv", o->n_head_kv, "KV heads");
  cmd->add_option("--head-dim", o->head_dim, "Head width");
  cmd->add_option("--n-ff", o->n_ff, "Feed-forward width");
  cmd->add_option("--ctx", o->ctx, "Training context written to the metadata");
  cmd->add_option("--rope-base", o->rope_base, "RoPE frequency base");
  cmd->add_flag("--untied", o->untied, "Write a separate output.weight");
  cmd->add_option("--seed", o->seed, "Random seed")->capture_default_str();
  cmd->add_option("-t,--threads", o->threads, "Threads")->capture_default_str();
  cmd->callback([&ctx, o] { ctx.exit_code = synth(*o); });
}

}  // namespace hearth::cli
