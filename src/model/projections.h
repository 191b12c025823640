// Several matrices applied to the same input rows: those whose activation type is the one the
// input was quantized to share one parallel region (ops::matmul_group); any other is a matmul of
// its own from the f32 rows. Each output row is the same either way (ops/matmul.h).
#pragma once

#include <initializer_list>

#include "ops/matmul.h"

namespace hearth {

inline void project(std::initializer_list<ops::MatmulOut> outs, const float* x,
                    const ops::QuantizedActivations& qx, ops::ThreadPool& pool) {
  ops::MatmulOut same[8];
  size_t n_same = 0;
  for (const ops::MatmulOut& o : outs) {
    if (ops::activation_type(o.w->type) == qx.type && n_same < 8)
      same[n_same++] = o;
    else
      ops::matmul(*o.w, x, qx.n_tok, o.y, pool);
  }
  if (n_same == 1) ops::matmul(*same[0].w, qx, same[0].y, pool);
  if (n_same > 1) ops::matmul_group({same, n_same}, qx, pool);
}

}  // namespace hearth
