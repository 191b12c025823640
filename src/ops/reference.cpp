#include "ops/reference.h"

#include <cmath>
#include <vector>

#include "quant/dequantize.h"

namespace hearth::ref {

float dot(const float* a, const float* b, int64_t n) {
  // Eight independent partial sums: a fixed, platform-independent summation order that the
  // compiler can still vectorise.
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) acc[j] += a[i + j] * b[i + j];
  float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

int64_t first_max_index(const float* x, int64_t n) {
  int64_t best = 0;
  float bv = x[0] != x[0] ? -INFINITY : x[0];
  for (int64_t i = 1; i < n; ++i)
    if (x[i] > bv) {
      bv = x[i];
      best = i;
    }
  return best;
}

void rmsnorm(const float* x, const float* w, float* y, int64_t n, float eps) {
  double ss = 0.0;
  for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  const float scale = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(n) + eps));
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale * (w ? w[i] : 1.0f);
}

void l2norm(const float* x, float* y, int64_t n, float eps) {
  double ss = 0.0;
  for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  const float scale = static_cast<float>(1.0 / std::sqrt(ss + eps));
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale;
}

void matmul(const MatrixView& w, const float* x, int64_t n_tok, float* y) {
  std::vector<float> row(static_cast<size_t>(w.n_cols));
  for (int64_t r = 0; r < w.n_rows; ++r) {
    dequantize_row(w.type, w.row(r), row.data(), w.n_cols);
    for (int64_t t = 0; t < n_tok; ++t)
      y[t * w.n_rows + r] = dot(row.data(), x + t * w.n_cols, w.n_cols);
  }
}

void get_row(const MatrixView& w, int64_t r, float* out) {
  dequantize_row(w.type, w.row(r), out, w.n_cols);
}

void softmax(float* x, int64_t n) {
  if (n <= 0) return;
  float mx = x[0];
  for (int64_t i = 1; i < n; ++i) mx = std::max(mx, x[i]);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void rope_apply(float* head, int64_t n_rot, const float* cos, const float* sin, bool neox) {
  const int64_t half = n_rot / 2;
  for (int64_t i = 0; i < half; ++i) {
    float* a = neox ? head + i : head + 2 * i;
    float* b = neox ? head + i + half : head + 2 * i + 1;
    const float x0 = *a, x1 = *b;
    *a = x0 * cos[i] - x1 * sin[i];
    *b = x0 * sin[i] + x1 * cos[i];
  }
}

}  // namespace hearth::ref

namespace hearth::ref {
namespace {

// YaRN: the dimension index at which a rotation completes `n_rot_turns` turns over orig_ctx.
double yarn_corr_dim(int64_t n_dims, int64_t orig_ctx, double n_rot_turns, double base) {
  return static_cast<double>(n_dims) *
         std::log(static_cast<double>(orig_ctx) / (n_rot_turns * 2.0 * M_PI)) /
         (2.0 * std::log(base));
}

}  // namespace

void rope_cos_sin(const RopeConfig& c, int64_t pos, float* cos, float* sin) {
  const int64_t half = c.n_rot / 2;
  double low = 0.0, high = 0.0, mscale = c.attn_factor;
  if (c.ext_factor != 0.0f) {
    low = std::max(0.0, std::floor(yarn_corr_dim(c.n_rot, c.orig_ctx, c.beta_fast, c.freq_base)));
    high = std::min(static_cast<double>(c.n_rot - 1),
                    std::ceil(yarn_corr_dim(c.n_rot, c.orig_ctx, c.beta_slow, c.freq_base)));
    mscale *= 1.0 + 0.1 * std::log(1.0 / c.freq_scale);
  }
  for (int64_t i = 0; i < half; ++i) {
    double theta_extrap = static_cast<double>(pos) *
                          std::pow(static_cast<double>(c.freq_base),
                                   -2.0 * static_cast<double>(i) / static_cast<double>(c.n_rot));
    if (c.freq_factors) theta_extrap /= c.freq_factors[i];
    const double theta_interp = c.freq_scale * theta_extrap;
    double theta = theta_interp;
    if (c.ext_factor != 0.0f) {
      const double y = (static_cast<double>(i) - low) / std::max(0.001, high - low);
      const double ramp = (1.0 - std::min(1.0, std::max(0.0, y))) * c.ext_factor;
      theta = theta_interp * (1.0 - ramp) + theta_extrap * ramp;
    }
    cos[i] = static_cast<float>(std::cos(theta) * mscale);
    sin[i] = static_cast<float>(std::sin(theta) * mscale);
  }
}

}  // namespace hearth::ref
