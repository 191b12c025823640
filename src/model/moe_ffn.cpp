#include "model/moe_ffn.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "model/batch_step.h"
#include "model/projections.h"
#include "ops/elementwise.h"
#include "ops/reference.h"
#include "util/error.h"

namespace hearth {
namespace {

// Scratch that only grows: an expert's row count changes from one to the next, and growing a
// vector within its capacity still zero-fills the new part.
template <typename T>
T* grow(std::vector<T>& v, int64_t n) {
  if (v.size() < static_cast<size_t>(n)) v.resize(static_cast<size_t>(n));
  return v.data();
}

}  // namespace

MoeFfn::MoeFfn(const Model& model) : model_(model) {
  const HParams& hp = model.hparams();
  if (hp.is_moe() &&
      (hp.n_expert > kMaxExperts || hp.n_expert_used < 1 || hp.n_expert_used > hp.n_expert))
    fail("{}: {} experts with {} used per token are not supported (at most {})",
         model.file().name(), hp.n_expert, hp.n_expert_used, kMaxExperts);
}

// Token t's experts and weights from its router logits: the k largest probabilities (ties to the
// lower expert id), renormalised when the model says so, times expert_weights_scale.
void MoeFfn::route(const float* logits, int64_t t) {
  const HParams& hp = model_.hparams();
  const int64_t ne = hp.n_expert;
  float p[kMaxExperts];
  std::copy(logits, logits + ne, p);
  if (hp.expert_gating_sigmoid) {
    for (int64_t e = 0; e < ne; ++e) p[e] = 1.0f / (1.0f + std::exp(-p[e]));
  } else {
    ref::softmax(p, ne);
  }
  int32_t* sel = &sel_[static_cast<size_t>(t * k_)];
  float* w = &wt_[static_cast<size_t>(t * k_)];
  bool taken[kMaxExperts] = {};
  float sum = 0.0f;
  for (int64_t k = 0; k < k_; ++k) {
    int64_t best = -1;
    for (int64_t e = 0; e < ne; ++e)
      if (!taken[e] && (best < 0 || p[e] > p[best])) best = e;
    taken[best] = true;
    sel[k] = static_cast<int32_t>(best);
    w[k] = p[best];
    sum += p[best];
  }
  for (int64_t k = 0; k < k_; ++k) {
    if (hp.expert_weights_norm) w[k] /= sum;
    w[k] *= hp.expert_weights_scale;
  }
}

// Expert e over the rows routed to it: gathered activations, gate/up, silu·up, down; each
// output row goes to its (token, slot) place in ye_.
void MoeFfn::run_expert(int64_t layer, int32_t e, const float* h,
                        const ops::QuantizedActivations& qh, ops::ThreadPool& pool) {
  const LayerWeights& L = model_.weights().layers[static_cast<size_t>(layer)];
  const int64_t E = n_cols_, F = model_.hparams().n_ff_exp;
  const int64_t r0 = first_[static_cast<size_t>(e)], n = first_[static_cast<size_t>(e) + 1] - r0;
  qe_.type = qh.type;
  qe_.n_tok = n;
  qe_.n_cols = qh.n_cols;
  qe_.row_stride = qh.row_stride;
  grow(qe_.data, n * static_cast<int64_t>(qh.row_stride));
  grow(hg_, n * E);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t t = rows_[static_cast<size_t>(r0 + i)] / k_;
    std::memcpy(qe_.data.data() + static_cast<size_t>(i) * qh.row_stride,
                qh.data.data() + static_cast<size_t>(t) * qh.row_stride, qh.row_stride);
    std::copy(h + t * E, h + (t + 1) * E, hg_.data() + i * E);
  }
  grow(g_, n * F);
  grow(u_, n * F);
  grow(d_, n * E);
  project({{&L.gate_exps[static_cast<size_t>(e)], g_.data()},
           {&L.up_exps[static_cast<size_t>(e)], u_.data()}},
          hg_.data(), qe_, pool);
  const MatrixView& down = L.down_exps[static_cast<size_t>(e)];
  ops::prepare_activations(ops::activation_type(down.type), n, F, qd_);
  ops::silu_mul(g_.data(), u_.data(), n * F);
  ops::quantize_activation_rows(g_.data(), 0, n, qd_);
  ops::matmul(down, qd_, d_.data(), pool);
  for (int64_t i = 0; i < n; ++i)
    std::copy(d_.data() + i * E, d_.data() + (i + 1) * E,
              ye_.data() + rows_[static_cast<size_t>(r0 + i)] * E);
}

void MoeFfn::add_shared_expert(int64_t layer, const float* h, const ops::QuantizedActivations& qh,
                               float* out, ops::ThreadPool& pool) {
  const LayerWeights& L = model_.weights().layers[static_cast<size_t>(layer)];
  const int64_t T = qh.n_tok, E = n_cols_, F = model_.hparams().n_ff_shexp;
  grow(g_, T * F);
  grow(u_, T * F);
  grow(sh_, T * E);
  project({{&L.gate_shexp, g_.data()}, {&L.up_shexp, u_.data()}}, h, qh, pool);
  ops::prepare_activations(ops::activation_type(L.down_shexp.type), T, F, qd_);
  over_tokens(pool, T, [&](int64_t t0, int64_t t1) {
    ops::silu_mul(&g_[static_cast<size_t>(t0 * F)], &u_[static_cast<size_t>(t0 * F)],
                  (t1 - t0) * F);
    ops::quantize_activation_rows(g_.data(), t0, t1, qd_);
  });
  ops::matmul(L.down_shexp, qd_, sh_.data(), pool);
  for (int64_t t = 0; t < T; ++t) {
    const float gate = 1.0f / (1.0f + std::exp(-ref::dot(h + t * E, L.gate_inp_shexp.data(), E)));
    const float* s = sh_.data() + t * E;
    float* o = out + t * E;
    for (int64_t i = 0; i < E; ++i) o[i] += gate * s[i];
  }
}

void MoeFfn::forward(int64_t layer, const float* h, const ops::QuantizedActivations& qh, float* out,
                     ops::ThreadPool& pool) {
  const HParams& hp = model_.hparams();
  const LayerWeights& L = model_.weights().layers[static_cast<size_t>(layer)];
  const int64_t T = qh.n_tok, E = hp.n_embd, ne = hp.n_expert;
  k_ = hp.n_expert_used;
  n_cols_ = E;
  logits_.resize(static_cast<size_t>(T * ne));
  sel_.resize(static_cast<size_t>(T * k_));
  wt_.resize(static_cast<size_t>(T * k_));
  ye_.resize(static_cast<size_t>(T * k_ * E));
  ops::matmul(L.router, h, T, logits_.data(), pool);
  for (int64_t t = 0; t < T; ++t) route(&logits_[static_cast<size_t>(t * ne)], t);

  // Group the (token, slot) rows by expert, in token order within an expert.
  first_.assign(static_cast<size_t>(ne + 1), 0);
  for (int32_t e : sel_) ++first_[static_cast<size_t>(e) + 1];
  for (int64_t e = 0; e < ne; ++e) first_[e + 1] += first_[e];
  rows_.resize(sel_.size());
  {
    std::vector<int64_t>& next = d_rows_fill_;
    next.assign(first_.begin(), first_.end() - 1);
    for (size_t r = 0; r < sel_.size(); ++r)
      rows_[static_cast<size_t>(next[static_cast<size_t>(sel_[r])]++)] = static_cast<int64_t>(r);
  }
  for (int32_t e = 0; e < ne; ++e)
    if (first_[static_cast<size_t>(e) + 1] > first_[static_cast<size_t>(e)])
      run_expert(layer, e, h, qh, pool);

  // Each token's experts added in its top-k order.
  over_tokens(pool, T, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      float* o = out + t * E;
      for (int64_t k = 0; k < k_; ++k) {
        const float w = wt_[static_cast<size_t>(t * k_ + k)];
        const float* y = ye_.data() + (t * k_ + k) * E;
        if (k == 0) {
          for (int64_t i = 0; i < E; ++i) o[i] = w * y[i];
        } else {
          for (int64_t i = 0; i < E; ++i) o[i] += w * y[i];
        }
      }
    }
  });
  if (!L.gate_inp_shexp.empty()) add_shared_expert(layer, h, qh, out, pool);
}

}  // namespace hearth
