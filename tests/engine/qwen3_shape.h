// Qwen3-0.6B's shape, for the tests of what depends only on a model's shape (step costs, the
// scheduler), without a model file.
#pragma once

#include "model/hparams.h"

namespace hearth::test {

inline HParams qwen3_06b() {
  HParams hp;
  hp.n_embd = 1024;
  hp.n_layer = 28;
  hp.n_head = 16;
  hp.n_head_kv = 8;
  hp.head_dim = 128;
  hp.n_ff = 3072;
  return hp;
}

}  // namespace hearth::test
