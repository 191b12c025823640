#include "engine/step_cost.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace hearth {

namespace {

// Attention (f32 FMA over the KV) runs at about 40% of the matmuls' operation rate (8-bit
// integer dots). Measured, Qwen3-0.6B Q8_0, 2 threads: a 32-token step at depth 1,000 took
// 1.58x one at depth 0, where the operation counts alone give 1.26x.
constexpr double kAttentionRelativeRate = 0.4;

}  // namespace

StepCost::StepCost(const HParams& hp) {
  // Per token: 2 operations per weight of the layer's matrices; per earlier position: Q·K and
  // P·V, 2 operations each per query element.
  const auto e = static_cast<double>(hp.n_embd);
  const double weights = 2 * e * static_cast<double>(hp.q_dim()) +
                         2 * e * static_cast<double>(hp.kv_dim()) +
                         3 * e * static_cast<double>(hp.n_ff);
  const double per_position = 4.0 * static_cast<double>(hp.q_dim());
  depth_ = per_position > 0 ? std::max(1.0, kAttentionRelativeRate * 2 * weights / per_position)
                            : std::numeric_limits<double>::infinity();
}

double StepCost::chunk(int64_t depth, int64_t n) const {
  const auto nd = static_cast<double>(n);
  return nd * (1 + (static_cast<double>(depth) + nd / 2) / depth_);
}

int64_t StepCost::fit(int64_t depth, int64_t max_n, double allowance) const {
  if (max_n <= 0) return 0;
  if (std::isinf(depth_))  // no attention: tokens cost 1 each
    return std::clamp(static_cast<int64_t>(std::floor(allowance)), int64_t{1}, max_n);
  // n² / 2D + n (1 + depth / D) <= allowance, the positive root, then corrected for rounding.
  const double b = 1 + static_cast<double>(depth) / depth_;
  const double root = depth_ * (std::sqrt(b * b + 2 * std::max(0.0, allowance) / depth_) - b);
  auto n = static_cast<int64_t>(std::clamp(std::floor(root), 1.0, static_cast<double>(max_n)));
  while (n < max_n && chunk(depth, n + 1) <= allowance) ++n;
  while (n > 1 && chunk(depth, n) > allowance) --n;
  return n;
}

}  // namespace hearth
