#include "model/delta_net_layer.h"

#include <cmath>

#include "model/batch_forward.h"
#include "model/projections.h"
#include "ops/elementwise.h"
#include "ops/recurrent.h"
#include "util/error.h"

namespace hearth {
namespace {

constexpr int64_t kMaxTaps = 16;

float softplus(float x) {
  return x > 20.0f ? x : std::log1p(std::exp(x));
}

}  // namespace

DeltaNetMixer::DeltaNetMixer(const Model& model) : model_(model) {
  const HParams& hp = model.hparams();
  taps_.resize(static_cast<size_t>(hp.n_layer));
  const int64_t C = hp.ssm_conv_channels(), K = hp.ssm_conv_kernel;
  for (int64_t l = 0; l < hp.n_layer; ++l) {
    if (hp.kind(l) != LayerKind::DeltaNet) continue;
    if (K < 1 || K > kMaxTaps) fail("DeltaNet conv kernel {} is not in 1..{}", K, kMaxTaps);
    const std::vector<float>& w = model.weights().layers[static_cast<size_t>(l)].ssm_conv;
    std::vector<float>& t = taps_[static_cast<size_t>(l)];
    t.resize(static_cast<size_t>(K * C));
    for (int64_t ch = 0; ch < C; ++ch)
      for (int64_t i = 0; i < K; ++i) t[static_cast<size_t>(i * C + ch)] = w[ch * K + i];
  }
}

// Channels [block*dh, (block+1)*dh) of one sequence: causal conv over its tokens (history from
// the state), silu, and for q / k heads the L2 norm (q also scaled by 1/sqrt(dk)); then the
// block's conv history in the state moves on to the last K-1 inputs.
void DeltaNetMixer::conv_block(const BatchStep& step, size_t seq, int64_t layer, int64_t block) {
  const HParams& hp = model_.hparams();
  const int64_t C = hp.ssm_conv_channels(), K = hp.ssm_conv_kernel, dh = hp.ssm_head_dim;
  const int64_t ch0 = block * dh, n = step.seq_rows(seq), row0 = step.seq_row0[seq];
  float* hist = step.kv->state.layer(step.batch[seq].state_slot, layer);  // K-1 rows of C
  const float* taps = taps_[static_cast<size_t>(layer)].data() + ch0;
  const bool is_q = block < hp.ssm_n_k_heads, is_qk = block < 2 * hp.ssm_n_k_heads;
  const float q_scale = 1.0f / std::sqrt(static_cast<float>(dh));
  const float* rows[kMaxTaps];
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t i = 0; i < K; ++i) {
      const int64_t j = t - (K - 1) + i;  // the input token this tap reads
      rows[i] = (j < 0 ? hist + (K - 1 + j) * C : m_.data() + (row0 + j) * C) + ch0;
    }
    float* c = c_.data() + (row0 + t) * C + ch0;
    ops::conv_taps(rows, taps, C, K, c, dh);
    ops::silu_inplace(c, dh);
    if (is_qk) {
      double ss = 0.0;
      for (int64_t i = 0; i < dh; ++i) ss += static_cast<double>(c[i]) * c[i];
      const float inv = 1.0f / std::sqrt(static_cast<float>(ss) + hp.rms_eps);
      const float f = is_q ? inv * q_scale : inv;
      for (int64_t i = 0; i < dh; ++i) c[i] *= f;
    }
  }
  // New history: the last K-1 inputs of [old history, new tokens]. Row r reads row n+r of that
  // concatenation, never one already overwritten (n + r > r).
  for (int64_t r = 0; r < K - 1; ++r) {
    const int64_t j = n - (K - 1) + r;
    const float* src = j < 0 ? hist + (K - 1 + j) * C : m_.data() + (row0 + j) * C;
    std::copy(src + ch0, src + ch0 + dh, hist + r * C + ch0);
  }
}

// Value head `head` of one sequence: the delta rule token by token on its dk x dv state.
void DeltaNetMixer::recur_head(const BatchStep& step, size_t seq, int64_t layer, int64_t head) {
  const HParams& hp = model_.hparams();
  const LayerWeights& L = model_.weights().layers[static_cast<size_t>(layer)];
  const int64_t C = hp.ssm_conv_channels(), K = hp.ssm_conv_kernel, dh = hp.ssm_head_dim;
  const int64_t nk = hp.ssm_n_k_heads, nv = hp.ssm_n_v_heads, inner = hp.ssm_inner();
  const int64_t n = step.seq_rows(seq), row0 = step.seq_row0[seq], kh = head % nk;
  float* S = step.kv->state.layer(step.batch[seq].state_slot, layer) + (K - 1) * C + head * dh * dh;
  const float a_log = L.ssm_a[static_cast<size_t>(head)],
              dt_bias = L.ssm_dt_bias[static_cast<size_t>(head)];
  // The head's gates, in place: alpha becomes the decay e^g, beta its sigmoid.
  for (int64_t t = row0; t < row0 + n; ++t) {
    float& a = alpha_[static_cast<size_t>(t * nv + head)];
    float& b = beta_[static_cast<size_t>(t * nv + head)];
    a = std::exp(softplus(a + dt_bias) * a_log);
    b = 1.0f / (1.0f + std::exp(-b));
  }
  ops::DeltaRuleTokens args;
  const float* c = c_.data() + row0 * C;
  args.q = c + kh * dh;
  args.k = c + (nk + kh) * dh;
  args.v = c + (2 * nk + head) * dh;
  args.qkv_stride = C;
  args.decay = alpha_.data() + row0 * nv + head;
  args.beta = beta_.data() + row0 * nv + head;
  args.gate_stride = nv;
  args.o = y_.data() + row0 * inner + head * dh;
  args.o_stride = inner;
  args.n = n;
  ops::delta_rule(S, args, dh, dh);
}

void DeltaNetMixer::forward(const BatchStep& step, int64_t layer, const float* h,
                            const ops::QuantizedActivations& qh, float* out,
                            ops::ThreadPool& pool) {
  const HParams& hp = model_.hparams();
  const LayerWeights& L = model_.weights().layers[static_cast<size_t>(layer)];
  const int64_t T = step.n_tok, C = hp.ssm_conv_channels(), nv = hp.ssm_n_v_heads;
  const int64_t inner = hp.ssm_inner(), dh = hp.ssm_head_dim;
  const auto n_seq = static_cast<int64_t>(step.batch.size());
  m_.resize(static_cast<size_t>(T * C));
  c_.resize(static_cast<size_t>(T * C));
  z_.resize(static_cast<size_t>(T * inner));
  y_.resize(static_cast<size_t>(T * inner));
  beta_.resize(static_cast<size_t>(T * nv));
  alpha_.resize(static_cast<size_t>(T * nv));
  project({{&L.ssm_qkv, m_.data()},
           {&L.ssm_gate, z_.data()},
           {&L.ssm_beta, beta_.data()},
           {&L.ssm_alpha, alpha_.data()}},
          h, qh, pool);

  const int64_t n_blocks = C / dh;
  pool.parallel_for(n_seq * n_blocks, [&](int64_t i, int) {
    conv_block(step, static_cast<size_t>(i / n_blocks), layer, i % n_blocks);
  });
  pool.parallel_for(n_seq * nv, [&](int64_t i, int) {
    recur_head(step, static_cast<size_t>(i / nv), layer, i % nv);
  });

  // Per token: each head's output normed (ssm_norm) and gated by silu(z), then ssm_out.
  ops::prepare_activations(ops::activation_type(L.ssm_out.type), T, inner, qy_);
  over_tokens(pool, T, [&](int64_t t0, int64_t t1) {
    float* y = y_.data() + t0 * inner;
    float* z = z_.data() + t0 * inner;
    ops::rmsnorm(y, L.ssm_norm.data(), y, (t1 - t0) * nv, dh, hp.rms_eps);
    ops::silu_mul(z, y, (t1 - t0) * inner);
    ops::quantize_activation_rows(z_.data(), t0, t1, qy_);
  });
  ops::matmul(L.ssm_out, qy_, out, pool);
}

}  // namespace hearth
