// The Mixture-of-Experts feed-forward block (qwen3moe, qwen35moe) on the fast path. Each token is
// routed (softmax or sigmoid over the router logits, top n_expert_used, renormalised, scaled);
// then the step's tokens are grouped by expert and each selected expert's gate/up/down matmuls
// run once over its gathered rows, so a step reads each active expert's weights once and a
// decode step reads only the active experts. A token's expert outputs are added in its top-k
// order (then qwen35moe's sigmoid-gated shared expert), so its result does not depend on which
// other tokens share the step.
#pragma once

#include <cstdint>
#include <vector>

#include "model/weights.h"
#include "ops/matmul.h"
#include "ops/thread_pool.h"

namespace hearth {

class MoeFfn {
 public:
  static constexpr int64_t kMaxExperts = 512;
  explicit MoeFfn(const Model& model);

  // out (T rows of n_embd) = the FFN of the normed rows h, also quantized in qh (the activation
  // type of the experts' gate matrices).
  void forward(int64_t layer, const float* h, const ops::QuantizedActivations& qh, float* out,
               ops::ThreadPool& pool);

  // The experts token t chose in the last forward() (top-k order), for tests and statistics.
  const int32_t* selected(int64_t t) const { return &sel_[static_cast<size_t>(t * k_)]; }

 private:
  void route(const float* logits, int64_t t);
  void run_expert(int64_t layer, int32_t e, const float* h, const ops::QuantizedActivations& qh,
                  ops::ThreadPool& pool);
  void add_shared_expert(int64_t layer, const float* h, const ops::QuantizedActivations& qh,
                         float* out, ops::ThreadPool& pool);

  const Model& model_;
  int64_t k_ = 0, n_cols_ = 0;
  std::vector<float> logits_, wt_, ye_, hg_, g_, u_, d_, sh_;  // scratch, kept warm
  std::vector<int32_t> sel_;                                   // [T][k] chosen experts
  std::vector<int64_t> first_, rows_;  // rows (t*k + slot) grouped by expert from first_[e]
  std::vector<int64_t> d_rows_fill_;   // grouping cursor
  ops::QuantizedActivations qe_, qd_;
};

}  // namespace hearth
