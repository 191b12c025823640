// ReferenceForward's sublayers, one function per layer kind and FFN, in the plain f32 math of
// ../shared/golden/synthetic-arch/README.md. Matrices are applied to all T tokens at once
// (ref::matmul); everything else loops over tokens, heads and channels in the obvious order.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "model/reference_forward.h"

namespace hearth {

namespace {

std::vector<float> floats(int64_t n) {
  return std::vector<float>(static_cast<size_t>(n));
}

// Per-head RMSNorm of n_heads heads of width hd, in place (qk norm, ssm_norm).
void rmsnorm_heads(float* x, const std::vector<float>& w, int64_t n_heads, int64_t hd, float eps) {
  for (int64_t j = 0; j < n_heads; ++j) ref::rmsnorm(x + j * hd, w.data(), x + j * hd, hd, eps);
}

// down(act(gate h) * up h) for T tokens; the activation is silu (SwiGLU) or tanh GELU (GeGLU).
void gated_ffn(const MatrixView& gate, const MatrixView& up, const MatrixView& down, FfnAct act,
               const float* h, int64_t T, float* out) {
  const int64_t F = gate.n_rows;
  std::vector<float> g = floats(T * F), u = floats(T * F);
  ref::matmul(gate, h, T, g.data());
  ref::matmul(up, h, T, u.data());
  for (size_t i = 0; i < g.size(); ++i)
    g[i] = (act == FfnAct::Gelu ? ref::gelu_tanh(g[i]) : ref::silu(g[i])) * u[i];
  ref::matmul(down, g.data(), T, out);
}

}  // namespace

void ReferenceForward::attend(int64_t layer, const float* q, int64_t T, float* out) const {
  const HParams& hp = model_.hparams();
  const int64_t hd = hp.head_dim, kv_dim = hp.kv_dim(), group = hp.n_head / hp.n_head_kv;
  const bool windowed = hp.kind(layer) == LayerKind::SlidingWindow;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const float* K = k_cache_[static_cast<size_t>(layer)].data();
  const float* V = v_cache_[static_cast<size_t>(layer)].data();
  std::vector<float> scores(static_cast<size_t>(n_past_ + T));
  for (int64_t t = 0; t < T; ++t) {
    const int64_t pos = n_past_ + t;
    // Key s is visible to the query at pos when s <= pos and (windowed) pos - s < n_swa.
    const int64_t first = windowed ? std::max<int64_t>(0, pos - hp.n_swa + 1) : 0;
    const int64_t n_kv = pos + 1 - first;
    for (int64_t hh = 0; hh < hp.n_head; ++hh) {
      const float* qh = q + t * hp.q_dim() + hh * hd;
      const int64_t kvh = hh / group;
      for (int64_t j = 0; j < n_kv; ++j)
        scores[static_cast<size_t>(j)] =
            ref::dot(qh, K + (first + j) * kv_dim + kvh * hd, hd) * scale;
      ref::softmax(scores.data(), n_kv);
      float* oh = out + t * hp.q_dim() + hh * hd;
      std::fill(oh, oh + hd, 0.0f);
      for (int64_t j = 0; j < n_kv; ++j) {
        const float p = scores[static_cast<size_t>(j)];
        const float* vj = V + (first + j) * kv_dim + kvh * hd;
        for (int64_t d = 0; d < hd; ++d) oh[d] += p * vj[d];
      }
    }
  }
}

void ReferenceForward::attention_layer(int64_t layer, const float* h, int64_t T, float* out) {
  const HParams& hp = model_.hparams();
  const LayerWeights& L = model_.weights().layers[static_cast<size_t>(layer)];
  const int64_t Q = hp.q_dim(), KV = hp.kv_dim(), hd = hp.head_dim;
  // With an output gate (qwen35) wq yields, head after head, the query then its gate.
  const int64_t q_stride = hp.attn_output_gate ? 2 * hd : hd;
  std::vector<float> qg = floats(T * hp.n_head * q_stride), q = floats(T * Q), k = floats(T * KV),
                     v = floats(T * KV), att = floats(T * Q), cs = floats(hp.n_rot / 2),
                     sn = floats(hp.n_rot / 2);
  ref::matmul(L.wq, h, T, qg.data());
  ref::matmul(L.wk, h, T, k.data());
  ref::matmul(L.wv, h, T, v.data());
  const ref::RopeConfig& rope = hp.kind(layer) == LayerKind::SlidingWindow ? rope_swa_ : rope_;
  const bool neox = hp.rope_layout == RopeLayout::Neox;
  for (int64_t t = 0; t < T; ++t) {
    float* qt = &q[t * Q];
    float* kt = &k[t * KV];
    float* vt = &v[t * KV];
    for (int64_t j = 0; j < hp.n_head; ++j)
      std::copy_n(&qg[(t * hp.n_head + j) * q_stride], hd, qt + j * hd);
    if (!L.bq.empty()) {
      for (int64_t i = 0; i < Q; ++i) qt[i] += L.bq[static_cast<size_t>(i)];
      for (int64_t i = 0; i < KV; ++i) kt[i] += L.bk[static_cast<size_t>(i)];
      for (int64_t i = 0; i < KV; ++i) vt[i] += L.bv[static_cast<size_t>(i)];
    }
    if (!L.q_norm.empty()) {
      rmsnorm_heads(qt, L.q_norm, hp.n_head, hd, hp.rms_eps);
      rmsnorm_heads(kt, L.k_norm, hp.n_head_kv, hd, hp.rms_eps);
    }
    const int64_t pos = n_past_ + t;
    ref::rope_cos_sin(rope, pos, cs.data(), sn.data());
    for (int64_t j = 0; j < hp.n_head; ++j)
      ref::rope_apply(qt + j * hd, hp.n_rot, cs.data(), sn.data(), neox);
    for (int64_t j = 0; j < hp.n_head_kv; ++j)
      ref::rope_apply(kt + j * hd, hp.n_rot, cs.data(), sn.data(), neox);
    std::copy(kt, kt + KV, k_cache_[static_cast<size_t>(layer)].begin() + pos * KV);
    std::copy(vt, vt + KV, v_cache_[static_cast<size_t>(layer)].begin() + pos * KV);
  }
  attend(layer, q.data(), T, att.data());
  if (hp.attn_output_gate)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t j = 0; j < hp.n_head; ++j)
        for (int64_t d = 0; d < hd; ++d)
          att[(t * hp.n_head + j) * hd + d] *=
              ref::sigmoid(qg[(t * hp.n_head + j) * q_stride + hd + d]);
  ref::matmul(L.wo, att.data(), T, out);
}

void ReferenceForward::dense_ffn(int64_t layer, const float* h, int64_t T, float* out) const {
  const LayerWeights& L = model_.weights().layers[static_cast<size_t>(layer)];
  gated_ffn(L.w_gate, L.w_up, L.w_down, model_.hparams().ffn_act, h, T, out);
}

// Per token: router probabilities (softmax, or sigmoid), the n_expert_used most probable experts
// (ties: the lower index), their weights renormalised and scaled as the model says, plus the
// shared expert times sigmoid(h . gate_inp_shexp) when there is one.
void ReferenceForward::moe_ffn(int64_t layer, const float* h, int64_t T, float* out) const {
  const HParams& hp = model_.hparams();
  const LayerWeights& L = model_.weights().layers[static_cast<size_t>(layer)];
  const int64_t E = hp.n_embd;
  std::vector<float> probs = floats(T * hp.n_expert), y = floats(E);
  ref::matmul(L.router, h, T, probs.data());
  std::vector<int64_t> order(static_cast<size_t>(hp.n_expert));
  for (int64_t t = 0; t < T; ++t) {
    const float* ht = h + t * E;
    float* ot = out + t * E;
    float* p = &probs[t * hp.n_expert];
    if (hp.expert_gating_sigmoid)
      for (int64_t e = 0; e < hp.n_expert; ++e) p[e] = ref::sigmoid(p[e]);
    else
      ref::softmax(p, hp.n_expert);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return p[a] > p[b]; });
    float sum = 0.0f;
    for (int64_t i = 0; i < hp.n_expert_used; ++i) sum += p[order[static_cast<size_t>(i)]];
    std::fill(ot, ot + E, 0.0f);
    for (int64_t i = 0; i < hp.n_expert_used; ++i) {
      const size_t e = static_cast<size_t>(order[static_cast<size_t>(i)]);
      float weight = p[e] * hp.expert_weights_scale;
      if (hp.expert_weights_norm) weight /= sum;
      gated_ffn(L.gate_exps[e], L.up_exps[e], L.down_exps[e], hp.ffn_act, ht, 1, y.data());
      for (int64_t c = 0; c < E; ++c) ot[c] += weight * y[static_cast<size_t>(c)];
    }
    if (hp.n_ff_shexp > 0) {
      gated_ffn(L.gate_shexp, L.up_shexp, L.down_shexp, hp.ffn_act, ht, 1, y.data());
      const float gate = ref::sigmoid(ref::dot(ht, L.gate_inp_shexp.data(), E));
      for (int64_t c = 0; c < E; ++c) ot[c] += gate * y[static_cast<size_t>(c)];
    }
  }
}

}  // namespace hearth
