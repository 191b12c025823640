// The model's view of KV memory: blocks of `layout.block_tokens` tokens, each holding every
// layer's K then V block back to back (`n_layer` layers: HParams::kv_layer maps a model layer to
// its place). Models with sliding-window layers keep them apart, in a second set of blocks
// (`window`): those hold only the positions a window still sees, so a sequence's window table
// has -1 (no block) where its tokens slid out of every window; the main blocks then hold only
// the full-attention layers. Beside them, the recurrent-state slots of models with recurrent
// layers (model/state_arena.h). Who owns the memory and which blocks a sequence uses
// (refcounts, prefix sharing) is the kv/ layer's business; the forward pass only addresses it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "model/state_arena.h"
#include "ops/attention.h"

namespace hearth {

struct KvBlocks {
  ops::KvLayout layout;
  int64_t n_layer = 0;
  uint8_t* base = nullptr;
  int32_t n_blocks = 0;

  size_t layer_stride() const { return 2 * layout.block_bytes(); }
  size_t block_stride() const { return layer_stride() * static_cast<size_t>(n_layer); }
  uint8_t* k(int32_t block, int64_t layer) const {
    return base + static_cast<size_t>(block) * block_stride() +
           static_cast<size_t>(layer) * layer_stride();
  }
  uint8_t* v(int32_t block, int64_t layer) const { return k(block, layer) + layout.block_bytes(); }
  // K+V bytes of one token over all layers.
  size_t bytes_per_token() const { return 2 * layout.token_bytes() * static_cast<size_t>(n_layer); }
};

struct KvArena : KvBlocks {
  KvBlocks window;   // sliding-window layers' blocks (n_layer 0: the model has none)
  StateArena state;  // recurrent layers' per-sequence state (no slots for attention-only models)
};

}  // namespace hearth
