#include "model/batch_forward.h"

#include <algorithm>
#include <cmath>

#include "model/projections.h"
#include "ops/elementwise.h"
#include "ops/recurrent.h"
#include "util/error.h"

namespace hearth {

BatchForward::BatchForward(const Model& model, ops::ThreadPool& pool)
    : model_(model),
      pool_(pool),
      attention_(model),
      delta_net_(model),
      short_conv_(model),
      moe_(model) {}

std::vector<float> BatchForward::forward(std::span<const SeqBatch> batch, const KvArena& kv) {
  std::vector<float> logits;
  forward(batch, kv, logits);
  return logits;
}

namespace {

// A window table must cover the batch's positions and have a block wherever the first token's
// window (or a later token) sees a position; blocks wholly before it may be -1 (slid out).
void validate_window(const SeqBatch& s, const KvArena& kv, int64_t n_swa) {
  const int64_t bt = kv.layout.block_tokens, n = static_cast<int64_t>(s.tokens.size());
  if (static_cast<int64_t>(s.window_blocks.size()) * bt < s.pos0 + n)
    fail("forward: {} window blocks of {} tokens cannot hold positions up to {}",
         s.window_blocks.size(), bt, s.pos0 + n);
  const int64_t first_seen = std::max<int64_t>(0, s.pos0 - n_swa + 1) / bt;
  for (size_t i = 0; i < s.window_blocks.size(); ++i) {
    const int32_t b = s.window_blocks[i];
    if (b == -1 && static_cast<int64_t>(i) < first_seen) continue;
    if (b < 0 || b >= kv.window.n_blocks)
      fail("forward: window block id {} at {} is out of range", b, i);
  }
}

}  // namespace

// Everything checked before the cache or a state slot is touched.
void BatchForward::validate(std::span<const SeqBatch> batch, const KvArena& kv) const {
  const HParams& hp = model_.hparams();
  if (kv.n_layer != hp.n_full_attention_layers() || kv.window.n_layer != hp.n_window_layers() ||
      kv.layout.n_kv_head != hp.n_head_kv || kv.layout.head_dim != hp.head_dim ||
      (kv.window.n_layer > 0 && kv.window.layout.block_tokens != kv.layout.block_tokens))
    fail("KV arena shape does not match the model");
  const bool recurrent = hp.has_recurrent_layers();
  if (recurrent && kv.state.slot_floats != hp.recurrent_state_floats())
    fail("{}: the KV arena's recurrent-state slots hold {} floats, the model needs {} per sequence",
         model_.file().name(), kv.state.slot_floats, hp.recurrent_state_floats());
  const int64_t bt = kv.layout.block_tokens;
  for (size_t i = 0; i < batch.size(); ++i) {
    const SeqBatch& s = batch[i];
    const int64_t n = static_cast<int64_t>(s.tokens.size());
    if (n == 0) fail("forward: a sequence in the batch has no tokens");
    if (s.pos0 < 0) fail("forward: negative position {}", s.pos0);
    if (static_cast<int64_t>(s.blocks.size()) * bt < s.pos0 + n)
      fail("forward: {} blocks of {} tokens cannot hold positions up to {}", s.blocks.size(), bt,
           s.pos0 + n);
    for (int32_t b : s.blocks)
      if (b < 0 || b >= kv.n_blocks) fail("forward: block id {} is out of range", b);
    if (kv.window.n_layer > 0) validate_window(s, kv, hp.n_swa);
    for (int32_t id : s.tokens)
      if (id < 0 || id >= hp.n_vocab)
        fail("token id {} is out of range (vocabulary {})", id, hp.n_vocab);
    if (!recurrent) continue;
    if (s.state_slot < 0 || s.state_slot >= kv.state.n_slots)
      fail("forward: state slot {} is out of range ({} slots)", s.state_slot, kv.state.n_slots);
    for (size_t j = 0; j < i; ++j)
      if (batch[j].state_slot == s.state_slot)
        fail("forward: two sequences of one batch share state slot {}", s.state_slot);
  }
}

// Each token's row, position and sequence; the embeddings (scaled for gemma3) into x.
void BatchForward::begin_step(std::span<const SeqBatch> batch, const KvArena& kv) {
  const HParams& hp = model_.hparams();
  step_.batch = batch;
  step_.kv = &kv;
  step_.seq_row0.assign(1, 0);
  step_.tok_pos.clear();
  step_.tok_seq.clear();
  for (size_t i = 0; i < batch.size(); ++i) {
    for (size_t t = 0; t < batch[i].tokens.size(); ++t) {
      step_.tok_pos.push_back(batch[i].pos0 + static_cast<int64_t>(t));
      step_.tok_seq.push_back(static_cast<int32_t>(i));
    }
    step_.seq_row0.push_back(static_cast<int64_t>(step_.tok_pos.size()));
  }
  step_.n_tok = static_cast<int64_t>(step_.tok_pos.size());
  const int64_t E = hp.n_embd;
  x_.resize(static_cast<size_t>(step_.n_tok * E));
  for (int64_t r = 0; r < step_.n_tok; ++r) {
    const SeqBatch& s = batch[static_cast<size_t>(step_.tok_seq[static_cast<size_t>(r)])];
    const int32_t id =
        s.tokens[static_cast<size_t>(step_.tok_pos[static_cast<size_t>(r)] - s.pos0)];
    float* xr = &x_[static_cast<size_t>(r * E)];
    ref::get_row(model_.weights().token_embd, id, xr);
    if (hp.embd_scale != 1.0f)
      for (int64_t i = 0; i < E; ++i) xr[i] *= hp.embd_scale;
  }
}

// The layer's token mixer: h (normed, quantized in qx_) to o.
void BatchForward::mixer(int64_t l, ops::ThreadPool& pool) {
  switch (model_.hparams().kind(l)) {
    case LayerKind::Attention:
    case LayerKind::SlidingWindow:
      return attention_.forward(step_, l, h_.data(), qx_, o_.data(), pool);
    case LayerKind::DeltaNet:
      return delta_net_.forward(step_, l, h_.data(), qx_, o_.data(), pool);
    case LayerKind::ShortConv:
      return short_conv_.forward(step_, l, h_.data(), qx_, o_.data(), pool);
  }
}

// SwiGLU or GeGLU: o = down(act(gate h) ⊙ up h).
void BatchForward::dense_ffn(int64_t l) {
  const HParams& hp = model_.hparams();
  const LayerWeights& L = model_.weights().layers[static_cast<size_t>(l)];
  const int64_t T = step_.n_tok, F = hp.n_ff;
  g_.resize(static_cast<size_t>(T * F));
  u_.resize(static_cast<size_t>(T * F));
  float *g = g_.data(), *u = u_.data();
  project({{&L.w_gate, g}, {&L.w_up, u}}, h_.data(), qx_, pool_);
  ops::prepare_activations(ops::activation_type(L.w_down.type), T, F, qx_);
  over_tokens(pool_, T, [&](int64_t t0, int64_t t1) {
    if (hp.ffn_act == FfnAct::Gelu)
      ops::gelu_mul(&g[t0 * F], &u[t0 * F], (t1 - t0) * F);
    else
      ops::silu_mul(&g[t0 * F], &u[t0 * F], (t1 - t0) * F);
    ops::quantize_activation_rows(g, t0, t1, qx_);
  });
  ops::matmul(L.w_down, qx_, o_.data(), pool_);
}

namespace {

// The activation type of the first matrix each sublayer applies to its normed input.
TensorType mixer_input_type(const LayerWeights& L, LayerKind kind) {
  switch (kind) {
    case LayerKind::DeltaNet:
      return ops::activation_type(L.ssm_qkv.type);
    case LayerKind::ShortConv:
      return ops::activation_type(L.conv_in.type);
    default:
      return ops::activation_type(L.wq.type);
  }
}
TensorType ffn_input_type(const LayerWeights& L) {
  return ops::activation_type(L.gate_exps.empty() ? L.w_gate.type : L.gate_exps[0].type);
}

}  // namespace

void BatchForward::forward(std::span<const SeqBatch> batch, const KvArena& kv,
                           std::vector<float>& logits) {
  const HParams& hp = model_.hparams();
  validate(batch, kv);
  int64_t n_out = 0;
  for (const SeqBatch& s : batch)
    n_out += s.logits == Logits::All    ? static_cast<int64_t>(s.tokens.size())
             : s.logits == Logits::Last ? 1
                                        : 0;
  begin_step(batch, kv);
  const int64_t T = step_.n_tok, E = hp.n_embd;
  if (T == 0) {
    logits.clear();
    return;
  }
  h_.resize(static_cast<size_t>(T * E));
  o_.resize(static_cast<size_t>(T * E));
  float *x = x_.data(), *h = h_.data(), *o = o_.data();

  // Each layer's per-token steps run fused around the matmuls: [previous FFN's post-norm,
  // residual, norm, quantize] mixer [post-norm, residual, norm, quantize] FFN. The last FFN's
  // residual is left to the rows that get logits.
  for (int64_t l = 0; l < hp.n_layer; ++l) {
    const LayerWeights& L = model_.weights().layers[static_cast<size_t>(l)];
    const LayerWeights* prev =
        l > 0 ? &model_.weights().layers[static_cast<size_t>(l - 1)] : nullptr;
    ops::prepare_activations(mixer_input_type(L, hp.kind(l)), T, E, qx_);
    over_tokens(pool_, T, [&](int64_t t0, int64_t t1) {
      if (prev != nullptr) {
        if (!prev->post_ffw_norm.empty())
          ops::rmsnorm(&o[t0 * E], prev->post_ffw_norm.data(), &o[t0 * E], t1 - t0, E, hp.rms_eps);
        ops::add_inplace(&x[t0 * E], &o[t0 * E], (t1 - t0) * E);
      }
      ops::rmsnorm(&x[t0 * E], L.attn_norm.data(), &h[t0 * E], t1 - t0, E, hp.rms_eps);
      ops::quantize_activation_rows(h, t0, t1, qx_);
    });
    mixer(l, pool_);

    ops::prepare_activations(ffn_input_type(L), T, E, qx_);
    over_tokens(pool_, T, [&](int64_t t0, int64_t t1) {
      if (!L.post_attn_norm.empty())
        ops::rmsnorm(&o[t0 * E], L.post_attn_norm.data(), &o[t0 * E], t1 - t0, E, hp.rms_eps);
      ops::add_inplace(&x[t0 * E], &o[t0 * E], (t1 - t0) * E);
      ops::rmsnorm(&x[t0 * E], L.ffn_norm.data(), &h[t0 * E], t1 - t0, E, hp.rms_eps);
      ops::quantize_activation_rows(h, t0, t1, qx_);
    });
    if (hp.is_moe())
      moe_.forward(l, h, qx_, o, pool_);
    else
      dense_ffn(l);
  }
  logits.resize(static_cast<size_t>(n_out * hp.n_vocab));
  if (n_out > 0) output_logits(logits);
}

// Logits only where asked: the output matrix is the largest single read per token.
void BatchForward::output_logits(std::vector<float>& logits) {
  const HParams& hp = model_.hparams();
  const ModelWeights& w = model_.weights();
  const LayerWeights& last = w.layers.back();
  const int64_t E = hp.n_embd;
  float *x = x_.data(), *h = h_.data(), *o = o_.data();
  int64_t out = 0;
  for (size_t s = 0; s < step_.batch.size(); ++s) {
    const SeqBatch& sb = step_.batch[s];
    const int64_t n = step_.seq_rows(s), row = step_.seq_row0[s];
    const int64_t first = sb.logits == Logits::All ? row : row + n - 1;
    const int64_t rows = sb.logits == Logits::All ? n : sb.logits == Logits::Last ? 1 : 0;
    if (rows == 0) continue;
    if (!last.post_ffw_norm.empty())
      ops::rmsnorm(&o[first * E], last.post_ffw_norm.data(), &o[first * E], rows, E, hp.rms_eps);
    ops::add_inplace(&x[first * E], &o[first * E], rows * E);  // the last layer's residual
    ops::rmsnorm(&x[first * E], w.output_norm.data(), &h[out * E], rows, E, hp.rms_eps);
    out += rows;
  }
  ops::matmul(w.output, h, out, logits.data(), pool_);
}

}  // namespace hearth
