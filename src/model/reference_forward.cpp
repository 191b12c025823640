#include "model/reference_forward.h"

#include <algorithm>
#include <cmath>

#include "util/error.h"

namespace hearth {

namespace {

std::vector<float> floats(int64_t n) {
  return std::vector<float>(static_cast<size_t>(n));
}

// rows [T][n] of x normalised into y with weight w.
void rmsnorm_rows(const float* x, const std::vector<float>& w, float* y, int64_t T, int64_t n,
                  float eps) {
  for (int64_t t = 0; t < T; ++t) ref::rmsnorm(x + t * n, w.data(), y + t * n, n, eps);
}

}  // namespace

ReferenceForward::ReferenceForward(const Model& model, int64_t n_ctx)
    : model_(model), n_ctx_(n_ctx) {
  const HParams& hp = model.hparams();
  if (n_ctx <= 0) fail("context size must be positive, got {}", n_ctx);
  rope_ = model.rope_config();
  rope_swa_ = model.rope_config_swa();
  const size_t n_layer = static_cast<size_t>(hp.n_layer);
  k_cache_.resize(n_layer);
  v_cache_.resize(n_layer);
  conv_state_.resize(n_layer);
  delta_state_.resize(n_layer);
  for (int64_t l = 0; l < hp.n_layer; ++l) {
    const size_t i = static_cast<size_t>(l);
    switch (hp.kind(l)) {
      case LayerKind::Attention:
      case LayerKind::SlidingWindow:
        // Sliding-window layers keep every position too: the oracle stays simple, and the
        // window is applied by the mask.
        k_cache_[i].resize(static_cast<size_t>(n_ctx * hp.kv_dim()));
        v_cache_[i].resize(static_cast<size_t>(n_ctx * hp.kv_dim()));
        break;
      case LayerKind::DeltaNet:
        conv_state_[i].resize(
            static_cast<size_t>((hp.ssm_conv_kernel - 1) * hp.ssm_conv_channels()));
        delta_state_[i].resize(
            static_cast<size_t>(hp.ssm_n_v_heads * hp.ssm_head_dim * hp.ssm_head_dim));
        break;
      case LayerKind::ShortConv:
        conv_state_[i].resize(static_cast<size_t>((hp.shortconv_l_cache - 1) * hp.n_embd));
        break;
    }
  }
}

void ReferenceForward::reset_recurrent_state() {
  for (auto& s : conv_state_) std::fill(s.begin(), s.end(), 0.0f);
  for (auto& s : delta_state_) std::fill(s.begin(), s.end(), 0.0f);
}

void ReferenceForward::truncate(int64_t n) {
  if (n < 0 || n > n_past_) fail("cannot truncate a cache of {} positions to {}", n_past_, n);
  if (n == n_past_) return;
  if (model_.hparams().has_recurrent_layers()) {
    if (n != 0)
      fail(
          "cannot truncate to {} of {} positions: the recurrent state of '{}' cannot be rolled "
          "back (only a reset to 0)",
          n, n_past_, model_.hparams().arch_name);
    reset_recurrent_state();
  }
  n_past_ = n;
}

std::vector<float> ReferenceForward::eval(std::span<const int32_t> tokens, bool all_logits) {
  const HParams& hp = model_.hparams();
  const ModelWeights& w = model_.weights();
  const int64_t T = static_cast<int64_t>(tokens.size());
  if (T == 0) fail("eval: empty batch");
  if (n_past_ + T > n_ctx_)
    fail("context is full: {} cached + {} new tokens exceed the context size {}", n_past_, T,
         n_ctx_);
  for (int32_t id : tokens)
    if (id < 0 || id >= hp.n_vocab)
      fail("token id {} is out of range (vocabulary {})", id, hp.n_vocab);

  const int64_t E = hp.n_embd;
  std::vector<float> x = floats(T * E), h = floats(T * E), o = floats(T * E);
  for (int64_t t = 0; t < T; ++t) {
    ref::get_row(w.token_embd, tokens[static_cast<size_t>(t)], &x[t * E]);
    for (int64_t i = 0; i < E; ++i) x[t * E + i] *= hp.embd_scale;
  }

  for (int64_t l = 0; l < hp.n_layer; ++l) {
    const LayerWeights& L = w.layers[static_cast<size_t>(l)];
    rmsnorm_rows(x.data(), L.attn_norm, h.data(), T, E, hp.rms_eps);
    switch (hp.kind(l)) {
      case LayerKind::Attention:
      case LayerKind::SlidingWindow:
        attention_layer(l, h.data(), T, o.data());
        break;
      case LayerKind::DeltaNet:
        deltanet_layer(l, h.data(), T, o.data());
        break;
      case LayerKind::ShortConv:
        shortconv_layer(l, h.data(), T, o.data());
        break;
    }
    if (hp.post_norms) rmsnorm_rows(o.data(), L.post_attn_norm, o.data(), T, E, hp.rms_eps);
    for (int64_t i = 0; i < T * E; ++i) x[static_cast<size_t>(i)] += o[static_cast<size_t>(i)];

    rmsnorm_rows(x.data(), L.ffn_norm, h.data(), T, E, hp.rms_eps);
    if (hp.is_moe())
      moe_ffn(l, h.data(), T, o.data());
    else
      dense_ffn(l, h.data(), T, o.data());
    if (hp.post_norms) rmsnorm_rows(o.data(), L.post_ffw_norm, o.data(), T, E, hp.rms_eps);
    for (int64_t i = 0; i < T * E; ++i) x[static_cast<size_t>(i)] += o[static_cast<size_t>(i)];
  }
  n_past_ += T;

  const int64_t first = all_logits ? 0 : T - 1, n_out = T - first;
  rmsnorm_rows(&x[first * E], w.output_norm, h.data(), n_out, E, hp.rms_eps);
  std::vector<float> logits = floats(n_out * hp.n_vocab);
  ref::matmul(w.output, h.data(), n_out, logits.data());
  return logits;
}

}  // namespace hearth
