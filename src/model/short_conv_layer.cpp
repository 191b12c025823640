#include "model/short_conv_layer.h"

#include <algorithm>

#include "model/batch_forward.h"
#include "model/projections.h"
#include "ops/elementwise.h"
#include "ops/recurrent.h"
#include "util/error.h"

namespace hearth {
namespace {

constexpr int64_t kMaxTaps = 16;
constexpr int64_t kChannelsPerTask = 64;

}  // namespace

ShortConvMixer::ShortConvMixer(const Model& model) : model_(model) {
  const HParams& hp = model.hparams();
  taps_.resize(static_cast<size_t>(hp.n_layer));
  const int64_t E = hp.n_embd, K = hp.shortconv_l_cache;
  for (int64_t l = 0; l < hp.n_layer; ++l) {
    if (hp.kind(l) != LayerKind::ShortConv) continue;
    if (K < 1 || K > kMaxTaps) fail("short conv l_cache {} is not in 1..{}", K, kMaxTaps);
    const std::vector<float>& w = model.weights().layers[static_cast<size_t>(l)].conv;
    std::vector<float>& t = taps_[static_cast<size_t>(l)];
    t.resize(static_cast<size_t>(K * E));
    for (int64_t ch = 0; ch < E; ++ch)
      for (int64_t i = 0; i < K; ++i) t[static_cast<size_t>(i * E + ch)] = w[ch * K + i];
  }
}

// Channels [ch0, ch0+nch) of one sequence: the causal conv over its tokens, then the history in
// the state moves on to the last K-1 inputs (row r reads row n+r of [history, tokens], never one
// already overwritten).
void ShortConvMixer::conv_block(const BatchStep& step, size_t seq, int64_t layer, int64_t ch0,
                                int64_t nch) {
  const HParams& hp = model_.hparams();
  const int64_t E = hp.n_embd, K = hp.shortconv_l_cache;
  const int64_t n = step.seq_rows(seq), row0 = step.seq_row0[seq];
  float* hist = step.kv->state.layer(step.batch[seq].state_slot, layer);
  auto input = [&](int64_t j) {  // the conv input of token j (negative: from the history)
    return (j < 0 ? hist + (K - 1 + j) * E : u_.data() + (row0 + j) * E) + ch0;
  };
  const float* taps = taps_[static_cast<size_t>(layer)].data() + ch0;
  const float* rows[kMaxTaps];
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t i = 0; i < K; ++i) rows[i] = input(t - (K - 1) + i);
    ops::conv_taps(rows, taps, E, K, y_.data() + (row0 + t) * E + ch0, nch);
  }
  for (int64_t r = 0; r < K - 1; ++r) {
    const float* src = input(n - (K - 1) + r);
    std::copy(src, src + nch, hist + r * E + ch0);
  }
}

void ShortConvMixer::forward(const BatchStep& step, int64_t layer, const float* h,
                             const ops::QuantizedActivations& qh, float* out,
                             ops::ThreadPool& pool) {
  const HParams& hp = model_.hparams();
  const LayerWeights& L = model_.weights().layers[static_cast<size_t>(layer)];
  const int64_t T = step.n_tok, E = hp.n_embd;
  bcx_.resize(static_cast<size_t>(T * 3 * E));
  u_.resize(static_cast<size_t>(T * E));
  y_.resize(static_cast<size_t>(T * E));
  project({{&L.conv_in, bcx_.data()}}, h, qh, pool);
  over_tokens(pool, T, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const float* b = bcx_.data() + t * 3 * E;
      float* u = u_.data() + t * E;
      std::copy(b, b + E, u);
      ops::mul_inplace(u, b + 2 * E, E);
    }
  });
  const auto n_seq = static_cast<int64_t>(step.batch.size());
  const int64_t n_blocks = (E + kChannelsPerTask - 1) / kChannelsPerTask;
  pool.parallel_for(n_seq * n_blocks, [&](int64_t i, int) {
    const int64_t ch0 = (i % n_blocks) * kChannelsPerTask;
    conv_block(step, static_cast<size_t>(i / n_blocks), layer, ch0,
               std::min(kChannelsPerTask, E - ch0));
  });
  ops::prepare_activations(ops::activation_type(L.conv_out.type), T, E, qy_);
  over_tokens(pool, T, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t)
      ops::mul_inplace(y_.data() + t * E, bcx_.data() + t * 3 * E + E, E);
    ops::quantize_activation_rows(y_.data(), t0, t1, qy_);
  });
  ops::matmul(L.conv_out, qy_, out, pool);
}

}  // namespace hearth
