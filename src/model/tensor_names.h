// The GGUF tensors each supported architecture expects, with shapes (GGUF order: ne[0] is the
// row length). Shared by weight binding (validation) and `hearth synth` (generation).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/hparams.h"

namespace hearth {

struct TensorSpec {
  std::string name;
  std::vector<int64_t> ne;
  bool matrix = false;    // 2-D weight (quantizable); otherwise a 1-D norm/bias/frequency vector
  bool optional = false;  // output.weight (tied embeddings otherwise) and rope_freqs.weight
  // A 2-D tensor kept in F32 by quantizers (MoE routers, conv taps): not `matrix`, yet not 1-D.
  bool f32_matrix = false;
};

std::vector<TensorSpec> tensor_specs(const HParams& hp);

std::string layer_tensor(int64_t layer, const char* suffix);  // "blk.<layer>.<suffix>"
const char* output_norm_name(const HParams& hp);              // the final norm's tensor name

}  // namespace hearth
