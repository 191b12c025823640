// ReferenceForward's recurrent mixers: qwen35's Gated DeltaNet and LFM2's gated short conv,
// token by token in f32 (../shared/golden/synthetic-arch/README.md). Their state (the last
// taps-1 conv inputs and the delta-rule matrices) lives in the ReferenceForward instance.
#include <algorithm>
#include <cmath>

#include "model/reference_forward.h"

namespace hearth {

namespace {

std::vector<float> floats(int64_t n) {
  return std::vector<float>(static_cast<size_t>(n));
}

// Causal depthwise convolution over `channels` channels with `taps` taps: out[t][ch] =
// sum_i w[ch][i] * in[t - (taps-1) + i][ch], where inputs before this batch come from `history`
// (the last taps-1 inputs, oldest first), which is then advanced past the batch.
void causal_conv(std::vector<float>& history, const float* in, int64_t T, int64_t channels,
                 int64_t taps, const std::vector<float>& w, float* out) {
  const int64_t H = taps - 1;
  std::vector<float> rows = floats((H + T) * channels);  // history then the batch
  std::copy(history.begin(), history.end(), rows.begin());
  std::copy(in, in + T * channels, rows.begin() + H * channels);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t ch = 0; ch < channels; ++ch) {
      float acc = 0.0f;
      for (int64_t i = 0; i < taps; ++i)
        acc += w[static_cast<size_t>(ch * taps + i)] *
               rows[static_cast<size_t>((t + i) * channels + ch)];
      out[t * channels + ch] = acc;
    }
  std::copy(rows.end() - H * channels, rows.end(), history.begin());
}

// One token of the gated delta rule for one value head. S: [dk][dv] (key-major).
//   S <- exp(g) S ;  S <- S + k (beta (v - S^T k))^T ;  o = S^T q
void delta_rule_step(float* S, const float* q, const float* k, const float* v, float g, float beta,
                     int64_t dk, int64_t dv, float* o) {
  const float decay = std::exp(g);
  for (int64_t i = 0; i < dk * dv; ++i) S[i] *= decay;
  std::vector<float> delta = floats(dv);
  for (int64_t d = 0; d < dv; ++d) {
    float kv = 0.0f;
    for (int64_t i = 0; i < dk; ++i) kv += S[i * dv + d] * k[i];
    delta[static_cast<size_t>(d)] = beta * (v[d] - kv);
  }
  for (int64_t i = 0; i < dk; ++i)
    for (int64_t d = 0; d < dv; ++d) S[i * dv + d] += k[i] * delta[static_cast<size_t>(d)];
  for (int64_t d = 0; d < dv; ++d) {
    float acc = 0.0f;
    for (int64_t i = 0; i < dk; ++i) acc += S[i * dv + d] * q[i];
    o[d] = acc;
  }
}

}  // namespace

void ReferenceForward::deltanet_layer(int64_t layer, const float* h, int64_t T, float* out) {
  const HParams& hp = model_.hparams();
  const LayerWeights& L = model_.weights().layers[static_cast<size_t>(layer)];
  const size_t li = static_cast<size_t>(layer);
  const int64_t C = hp.ssm_conv_channels(), nk = hp.ssm_n_k_heads, nv = hp.ssm_n_v_heads,
                dk = hp.ssm_head_dim, dv = hp.ssm_head_dim, inner = hp.ssm_inner();
  std::vector<float> m = floats(T * C), c = floats(T * C), z = floats(T * inner),
                     beta = floats(T * nv), g = floats(T * nv), y = floats(T * inner);
  ref::matmul(L.ssm_qkv, h, T, m.data());
  ref::matmul(L.ssm_gate, h, T, z.data());
  ref::matmul(L.ssm_beta, h, T, beta.data());
  ref::matmul(L.ssm_alpha, h, T, g.data());
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < nv; ++j) {
      const size_t i = static_cast<size_t>(t * nv + j);
      beta[i] = ref::sigmoid(beta[i]);
      g[i] = ref::softplus(g[i] + L.ssm_dt_bias[static_cast<size_t>(j)]) *
             L.ssm_a[static_cast<size_t>(j)];
    }
  causal_conv(conv_state_[li], m.data(), T, C, hp.ssm_conv_kernel, L.ssm_conv, c.data());
  for (float& v : c) v = ref::silu(v);

  const float q_scale = 1.0f / std::sqrt(static_cast<float>(dk));
  std::vector<float> q = floats(dk), k = floats(dk);
  for (int64_t t = 0; t < T; ++t) {
    const float* ct = &c[t * C];  // [q: nk heads | k: nk heads | v: nv heads]
    for (int64_t j = 0; j < nv; ++j) {
      const int64_t a = j % nk;  // value head j reads key head j mod nk ("tiled")
      ref::l2norm(ct + a * dk, q.data(), dk, hp.rms_eps);
      ref::l2norm(ct + (nk + a) * dk, k.data(), dk, hp.rms_eps);
      for (float& x : q) x *= q_scale;
      float* S = &delta_state_[li][static_cast<size_t>(j * dk * dv)];
      float* yt = &y[t * inner + j * dv];
      delta_rule_step(S, q.data(), k.data(), ct + 2 * nk * dk + j * dv,
                      g[static_cast<size_t>(t * nv + j)], beta[static_cast<size_t>(t * nv + j)], dk,
                      dv, yt);
      ref::rmsnorm(yt, L.ssm_norm.data(), yt, dv, hp.rms_eps);
      for (int64_t d = 0; d < dv; ++d)
        yt[d] *= ref::silu(z[static_cast<size_t>(t * inner + j * dv + d)]);
    }
  }
  ref::matmul(L.ssm_out, y.data(), T, out);
}

// LFM2: [B | C | X] = in_proj h ; y = conv(B * X) ; out = out_proj (C * y).
void ReferenceForward::shortconv_layer(int64_t layer, const float* h, int64_t T, float* out) {
  const HParams& hp = model_.hparams();
  const LayerWeights& L = model_.weights().layers[static_cast<size_t>(layer)];
  const int64_t E = hp.n_embd;
  std::vector<float> bcx = floats(T * 3 * E), u = floats(T * E), y = floats(T * E);
  ref::matmul(L.conv_in, h, T, bcx.data());
  for (int64_t t = 0; t < T; ++t)
    for (int64_t ch = 0; ch < E; ++ch)
      u[static_cast<size_t>(t * E + ch)] = bcx[static_cast<size_t>(t * 3 * E + ch)] *
                                           bcx[static_cast<size_t>(t * 3 * E + 2 * E + ch)];
  causal_conv(conv_state_[static_cast<size_t>(layer)], u.data(), T, E, hp.shortconv_l_cache, L.conv,
              y.data());
  for (int64_t t = 0; t < T; ++t)
    for (int64_t ch = 0; ch < E; ++ch)
      y[static_cast<size_t>(t * E + ch)] *= bcx[static_cast<size_t>(t * 3 * E + E + ch)];
  ref::matmul(L.conv_out, y.data(), T, out);
}

}  // namespace hearth
