// `hearth inspect MODEL`: metadata, tensor table and (for supported architectures) the
// hyperparameters hearth reads from it.
#include <fmt/format.h>

#include "cli/commands.h"
#include "gguf/reader.h"
#include "model/hparams.h"
#include "util/error.h"

namespace hearth::cli {
namespace {

// How many layers of each kind, and what a sequence keeps for them: K/V per token for the
// attention layers, a fixed recurrent state for DeltaNet / short-conv layers.
void print_layer_kinds(const HParams& hp) {
  fmt::print("layer kinds:\n");
  for (LayerKind k : {LayerKind::Attention, LayerKind::SlidingWindow, LayerKind::DeltaNet,
                      LayerKind::ShortConv}) {
    int64_t n = 0;
    for (int64_t l = 0; l < hp.n_layer; ++l) n += hp.kind(l) == k;
    if (n > 0) fmt::print("  {:<16} {} layers\n", layer_kind_name(k), n);
  }
  if (hp.has_sliding_window()) fmt::print("  sliding window: {} positions\n", hp.n_swa);
  fmt::print("  K/V per token (f32): {} bytes over {} attention layers\n",
             hp.n_kv_layers() * 2 * hp.kv_dim() * 4, hp.n_kv_layers());
  if (hp.has_sliding_window()) {
    // Two pools (kv/kv_manager.h): the full-attention layers keep every position, the
    // sliding-window layers only their window's.
    const int64_t per_layer = 2 * hp.kv_dim() * 4;
    fmt::print("  K/V per token (f32), full-attention pool: {} bytes ({} layers)\n",
               hp.n_full_attention_layers() * per_layer, hp.n_full_attention_layers());
    fmt::print(
        "  K/V per token (f32), window pool: {} bytes ({} layers, kept for the last {} "
        "positions of a sequence)\n",
        hp.n_window_layers() * per_layer, hp.n_window_layers(), hp.n_swa);
  }
  if (hp.has_recurrent_layers())
    fmt::print("  recurrent state per sequence (f32): {} bytes ({:.3f} MiB)\n",
               hp.recurrent_state_floats() * 4,
               static_cast<double>(hp.recurrent_state_floats() * 4) / (1 << 20));
}

}  // namespace

void add_inspect(CLI::App& app, Context& ctx) {
  auto path = std::make_shared<std::string>();
  auto max_items = std::make_shared<size_t>(8);
  CLI::App* cmd = app.add_subcommand("inspect", "Print a GGUF file's metadata and tensor table");
  cmd->add_option("model", *path, "GGUF file")->required();
  cmd->add_option("--max-items", *max_items, "Array items shown per metadata value");
  cmd->callback([&ctx, path, max_items] {
    gguf::File f = gguf::File::open(*path);
    fmt::print("file: {}\nversion: {}\nalignment: {}\ndata offset: {}\nsize: {} bytes\n", f.name(),
               f.version(), f.alignment(), f.data_offset(), f.file_size());
    fmt::print("\nmetadata ({} keys):\n", f.metadata().size());
    for (const auto& kv : f.metadata())
      fmt::print("  {:<48} {:<8} {}\n", kv.key, gguf::value_type_name(kv.value.type),
                 kv.value.to_display(*max_items));
    uint64_t total = 0;
    fmt::print("\ntensors ({}):\n  {:<36} {:<6} {:<24} {:>12} {:>12}\n", f.tensors().size(), "name",
               "type", "shape", "offset", "bytes");
    for (const auto& t : f.tensors()) {
      fmt::print("  {:<36} {:<6} {:<24} {:>12} {:>12}\n", t.name, type_name(t.type),
                 t.shape_string(), t.offset, t.nbytes);
      total += t.nbytes;
    }
    fmt::print("  total tensor bytes: {}\n", total);
    if (!f.tensors().empty()) {
      try {
        const HParams hp = HParams::from_gguf(f);
        fmt::print("\nhyperparameters: {}\n", hp.summary());
        print_layer_kinds(hp);
      } catch (const Error& e) {
        fmt::print("\nhyperparameters: not loadable by hearth: {}\n", e.what());
      }
    }
    ctx.exit_code = 0;
  });
}

}  // namespace hearth::cli
