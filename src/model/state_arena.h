// The model's view of recurrent-state memory: fixed-size slots, one per sequence (or per cached
// snapshot), each holding every recurrent layer's state back to back in f32. A DeltaNet layer's
// part is its conv history (the last K-1 rows of the conv input, oldest first, conv-channels
// wide) then its delta-rule matrices (nv heads of dk x dv, key-major); a short-conv layer's is
// its last l_cache-1 rows of B*x (oldest first, n_embd wide). A slot holds the state after the
// tokens a sequence has computed: all zeros before its first token.
// Who owns the slots, and which sequence or snapshot uses which, is the kv/ layer's business.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/hparams.h"

namespace hearth {

struct StateArena {
  std::vector<int64_t> layer_offset;  // per model layer: floats into a slot; -1 for KV layers
  int64_t slot_floats = 0;            // 0: the model has no recurrent layers
  float* base = nullptr;
  int32_t n_slots = 0;

  // The slot layout of a model (no memory: base null, n_slots 0).
  static StateArena layout_for(const HParams& hp) {
    StateArena a;
    a.layer_offset.assign(static_cast<size_t>(hp.n_layer), -1);
    for (int64_t l = 0; l < hp.n_layer; ++l) {
      if (!hp.is_recurrent(l)) continue;
      a.layer_offset[static_cast<size_t>(l)] = a.slot_floats;
      a.slot_floats += hp.recurrent_state_floats(l);
    }
    return a;
  }
  size_t slot_bytes() const { return static_cast<size_t>(slot_floats) * sizeof(float); }
  float* slot(int32_t s) const { return base + static_cast<size_t>(s) * slot_floats; }
  float* layer(int32_t s, int64_t l) const {
    return slot(s) + layer_offset[static_cast<size_t>(l)];
  }
};

}  // namespace hearth
