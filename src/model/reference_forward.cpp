#include "model/reference_forward.h"

#include <cmath>

#include "util/error.h"

namespace hearth {

ReferenceForward::ReferenceForward(const Model& model, int64_t n_ctx)
    : model_(model), n_ctx_(n_ctx) {
  if (model_.hparams().is_moe() || model_.hparams().has_recurrent_layers() ||
      model_.hparams().has_sliding_window() || model_.hparams().attn_output_gate ||
      model_.hparams().post_norms)
    fail("{}: this forward path does not run architecture '{}' yet", model_.file().name(),
         model_.hparams().arch_name);
  const HParams& hp = model.hparams();
  if (n_ctx <= 0) fail("context size must be positive, got {}", n_ctx);
  rope_ = model.rope_config();
  const size_t cache = static_cast<size_t>(n_ctx * hp.kv_dim());
  k_cache_.assign(static_cast<size_t>(hp.n_layer), std::vector<float>(cache));
  v_cache_.assign(static_cast<size_t>(hp.n_layer), std::vector<float>(cache));
}

void ReferenceForward::truncate(int64_t n) {
  if (n < 0 || n > n_past_) fail("cannot truncate a cache of {} positions to {}", n_past_, n);
  n_past_ = n;
}

// q: [n_tok][q_dim] (already roped); out: [n_tok][q_dim]. Causal: token t sees positions
// 0 .. n_past_+t, whose K/V are in the cache.
void ReferenceForward::attention(int64_t layer, const float* q, int64_t n_tok, float* out) const {
  const HParams& hp = model_.hparams();
  const int64_t hd = hp.head_dim, kv_dim = hp.kv_dim(), group = hp.n_head / hp.n_head_kv;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const float* K = k_cache_[static_cast<size_t>(layer)].data();
  const float* V = v_cache_[static_cast<size_t>(layer)].data();
  std::vector<float> scores(static_cast<size_t>(n_past_ + n_tok));
  for (int64_t t = 0; t < n_tok; ++t) {
    const int64_t n_kv = n_past_ + t + 1;
    for (int64_t h = 0; h < hp.n_head; ++h) {
      const float* qh = q + t * hp.q_dim() + h * hd;
      const int64_t kvh = h / group;
      for (int64_t j = 0; j < n_kv; ++j)
        scores[static_cast<size_t>(j)] = ref::dot(qh, K + j * kv_dim + kvh * hd, hd) * scale;
      ref::softmax(scores.data(), n_kv);
      float* oh = out + t * hp.q_dim() + h * hd;
      for (int64_t d = 0; d < hd; ++d) oh[d] = 0.0f;
      for (int64_t j = 0; j < n_kv; ++j) {
        const float p = scores[static_cast<size_t>(j)];
        const float* vj = V + j * kv_dim + kvh * hd;
        for (int64_t d = 0; d < hd; ++d) oh[d] += p * vj[d];
      }
    }
  }
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

  const int64_t E = hp.n_embd, Q = hp.q_dim(), KV = hp.kv_dim(), F = hp.n_ff, hd = hp.head_dim;
  auto buf = [](int64_t n) { return std::vector<float>(static_cast<size_t>(n)); };
  std::vector<float> x = buf(T * E), h = buf(T * E), q = buf(T * Q), k = buf(T * KV),
                     v = buf(T * KV), att = buf(T * Q), o = buf(T * E), g = buf(T * F),
                     u = buf(T * F), cs = buf(hp.n_rot / 2), sn = buf(hp.n_rot / 2);

  for (int64_t t = 0; t < T; ++t)
    ref::get_row(w.token_embd, tokens[static_cast<size_t>(t)], &x[t * E]);

  for (int64_t l = 0; l < hp.n_layer; ++l) {
    const LayerWeights& L = w.layers[static_cast<size_t>(l)];
    for (int64_t t = 0; t < T; ++t)
      ref::rmsnorm(&x[t * E], L.attn_norm.data(), &h[t * E], E, hp.rms_eps);
    ref::matmul(L.wq, h.data(), T, q.data());
    ref::matmul(L.wk, h.data(), T, k.data());
    ref::matmul(L.wv, h.data(), T, v.data());
    for (int64_t t = 0; t < T; ++t) {
      float* qt = &q[t * Q];
      float* kt = &k[t * KV];
      float* vt = &v[t * KV];
      if (!L.bq.empty()) {
        for (int64_t i = 0; i < Q; ++i) qt[i] += L.bq[static_cast<size_t>(i)];
        for (int64_t i = 0; i < KV; ++i) kt[i] += L.bk[static_cast<size_t>(i)];
        for (int64_t i = 0; i < KV; ++i) vt[i] += L.bv[static_cast<size_t>(i)];
      }
      if (!L.q_norm.empty()) {
        for (int64_t hh = 0; hh < hp.n_head; ++hh)
          ref::rmsnorm(qt + hh * hd, L.q_norm.data(), qt + hh * hd, hd, hp.rms_eps);
        for (int64_t hh = 0; hh < hp.n_head_kv; ++hh)
          ref::rmsnorm(kt + hh * hd, L.k_norm.data(), kt + hh * hd, hd, hp.rms_eps);
      }
      const int64_t pos = n_past_ + t;
      ref::rope_cos_sin(rope_, pos, cs.data(), sn.data());
      const bool neox = hp.rope_layout == RopeLayout::Neox;
      for (int64_t hh = 0; hh < hp.n_head; ++hh)
        ref::rope_apply(qt + hh * hd, hp.n_rot, cs.data(), sn.data(), neox);
      for (int64_t hh = 0; hh < hp.n_head_kv; ++hh)
        ref::rope_apply(kt + hh * hd, hp.n_rot, cs.data(), sn.data(), neox);
      std::copy(kt, kt + KV, k_cache_[static_cast<size_t>(l)].begin() + pos * KV);
      std::copy(vt, vt + KV, v_cache_[static_cast<size_t>(l)].begin() + pos * KV);
    }
    attention(l, q.data(), T, att.data());
    ref::matmul(L.wo, att.data(), T, o.data());
    for (int64_t i = 0; i < T * E; ++i) x[static_cast<size_t>(i)] += o[static_cast<size_t>(i)];

    for (int64_t t = 0; t < T; ++t)
      ref::rmsnorm(&x[t * E], L.ffn_norm.data(), &h[t * E], E, hp.rms_eps);
    ref::matmul(L.w_gate, h.data(), T, g.data());
    ref::matmul(L.w_up, h.data(), T, u.data());
    for (int64_t i = 0; i < T * F; ++i)
      g[static_cast<size_t>(i)] = ref::silu(g[static_cast<size_t>(i)]) * u[static_cast<size_t>(i)];
    ref::matmul(L.w_down, g.data(), T, o.data());
    for (int64_t i = 0; i < T * E; ++i) x[static_cast<size_t>(i)] += o[static_cast<size_t>(i)];
  }
  n_past_ += T;

  const int64_t first = all_logits ? 0 : T - 1, n_out = T - first;
  for (int64_t t = first; t < T; ++t)
    ref::rmsnorm(&x[t * E], w.output_norm.data(), &h[(t - first) * E], E, hp.rms_eps);
  std::vector<float> logits = buf(n_out * hp.n_vocab);
  ref::matmul(w.output, h.data(), n_out, logits.data());
  return logits;
}

}  // namespace hearth
