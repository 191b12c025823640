#include "model/attention_layer.h"

#include <algorithm>
#include <cmath>

#include "model/batch_forward.h"
#include "model/projections.h"
#include "ops/elementwise.h"
#include "ops/recurrent.h"

namespace hearth {

void RopeTable::fill_to(int64_t pos) {
  const size_t half = static_cast<size_t>(cfg_.n_rot / 2);
  while (data_.size() < (static_cast<size_t>(pos) + 1) * 2 * half) {
    const int64_t p = static_cast<int64_t>(data_.size() / (2 * half));
    data_.resize(data_.size() + 2 * half);
    float* t = data_.data() + static_cast<size_t>(p) * 2 * half;
    ref::rope_cos_sin(cfg_, p, t, t + half);
  }
}

namespace {

// Sliding-window layers live in the window blocks, addressed by the window table; the others in
// the main blocks (model/kv_arena.h).
bool in_window(const HParams& hp, int64_t layer) {
  return hp.kind(layer) == LayerKind::SlidingWindow;
}
const KvBlocks& blocks_of(const KvArena& kv, const HParams& hp, int64_t layer) {
  return in_window(hp, layer) ? kv.window : kv;
}
std::span<const int32_t> table_of(const SeqBatch& s, const HParams& hp, int64_t layer) {
  return in_window(hp, layer) ? s.window_blocks : s.blocks;
}

}  // namespace

AttentionMixer::AttentionMixer(const Model& model)
    : model_(model), rope_(model.rope_config()), rope_swa_(model.rope_config_swa()) {}

// Token t's q (split from its gate), k and v: bias, q/k norm, RoPE, and K/V into its block.
void AttentionMixer::prepare_token(const BatchStep& step, int64_t layer, int64_t t) {
  const HParams& hp = model_.hparams();
  const LayerWeights& L = model_.weights().layers[static_cast<size_t>(layer)];
  const int64_t Q = hp.q_dim(), KV = hp.kv_dim(), hd = hp.head_dim;
  float *qt = &q_[static_cast<size_t>(t * Q)], *kt = &k_[static_cast<size_t>(t * KV)],
        *vt = &v_[static_cast<size_t>(t * KV)];
  if (hp.attn_output_gate) {  // head j: its query then its gate
    const float* qg = &qg_[static_cast<size_t>(t * 2 * Q)];
    for (int64_t j = 0; j < hp.n_head; ++j) {
      std::copy(qg + 2 * hd * j, qg + 2 * hd * j + hd, qt + hd * j);
      std::copy(qg + 2 * hd * j + hd, qg + 2 * hd * (j + 1),
                &gate_[static_cast<size_t>(t * Q + hd * j)]);
    }
  }
  if (!L.bq.empty()) {
    ops::add_inplace(qt, L.bq.data(), Q);
    ops::add_inplace(kt, L.bk.data(), KV);
    ops::add_inplace(vt, L.bv.data(), KV);
  }
  if (!L.q_norm.empty()) {
    ops::rmsnorm(qt, L.q_norm.data(), qt, hp.n_head, hd, hp.rms_eps);
    ops::rmsnorm(kt, L.k_norm.data(), kt, hp.n_head_kv, hd, hp.rms_eps);
  }
  const int64_t pos = step.tok_pos[static_cast<size_t>(t)], half = hp.n_rot / 2;
  const bool neox = hp.rope_layout == RopeLayout::Neox;
  const float* cs = (hp.kind(layer) == LayerKind::SlidingWindow ? rope_swa_ : rope_).at(pos);
  ops::rope(qt, hp.n_head, hd, hp.n_rot, cs, cs + half, neox);
  ops::rope(kt, hp.n_head_kv, hd, hp.n_rot, cs, cs + half, neox);
  const KvBlocks& kv = blocks_of(*step.kv, hp, layer);
  const int64_t bt = kv.layout.block_tokens, kl = hp.kv_layer(layer);
  const int32_t block =
      table_of(step.batch[static_cast<size_t>(step.tok_seq[static_cast<size_t>(t)])], hp,
               layer)[static_cast<size_t>(pos / bt)];
  ops::kv_store_token(kv.layout, kt, kv.k(block, kl), pos % bt);
  ops::kv_store_token(kv.layout, vt, kv.v(block, kl), pos % bt);
}

// Every sequence's block pointers for this layer (one flat list), then one attention call.
void AttentionMixer::attend(const BatchStep& step, int64_t layer, ops::ThreadPool& pool) {
  const HParams& hp = model_.hparams();
  const KvBlocks& kv = blocks_of(*step.kv, hp, layer);
  const int64_t Q = hp.q_dim(), bt = kv.layout.block_tokens, kl = hp.kv_layer(layer);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hp.head_dim));
  const int64_t window = hp.kind(layer) == LayerKind::SlidingWindow ? hp.n_swa : 0;
  size_t n_ptrs = 0;
  for (size_t s = 0; s < step.batch.size(); ++s)
    n_ptrs += static_cast<size_t>((step.batch[s].pos0 + step.seq_rows(s) + bt - 1) / bt);
  k_ptrs_.resize(n_ptrs);
  v_ptrs_.resize(n_ptrs);
  views_.clear();
  args_.clear();
  size_t ptr0 = 0;
  for (size_t s = 0; s < step.batch.size(); ++s) {
    const SeqBatch& sb = step.batch[s];
    const int64_t n = step.seq_rows(s), row = step.seq_row0[s];
    const size_t nb = static_cast<size_t>((sb.pos0 + n + bt - 1) / bt);
    const std::span<const int32_t> table = table_of(sb, hp, layer);
    for (size_t i = 0; i < nb; ++i) {
      // A window block that slid out (-1) is never read (ops/attention_kernels.h's zero row).
      k_ptrs_[ptr0 + i] = table[i] < 0 ? nullptr : kv.k(table[i], kl);
      v_ptrs_[ptr0 + i] = table[i] < 0 ? nullptr : kv.v(table[i], kl);
    }
    views_.push_back({kv.layout, k_ptrs_.data() + ptr0, v_ptrs_.data() + ptr0, sb.pos0 + n});
    ops::AttentionArgs a{&q_[static_cast<size_t>(row * Q)],  n, hp.n_head, sb.pos0, scale,
                         &att_[static_cast<size_t>(row * Q)]};
    a.window = window;
    args_.push_back(a);
    ptr0 += nb;
  }
  ops::attention_batch(args_, views_, pool);
}

void AttentionMixer::forward(const BatchStep& step, int64_t layer, const float* h,
                             const ops::QuantizedActivations& qh, float* out,
                             ops::ThreadPool& pool) {
  const HParams& hp = model_.hparams();
  const LayerWeights& L = model_.weights().layers[static_cast<size_t>(layer)];
  const int64_t T = step.n_tok, Q = hp.q_dim(), KV = hp.kv_dim();
  auto buf = [](std::vector<float>& v, int64_t n) {
    v.resize(static_cast<size_t>(n));
    return v.data();
  };
  float* q = buf(q_, T * Q);
  float* qg = hp.attn_output_gate ? buf(qg_, 2 * T * Q) : q;
  if (hp.attn_output_gate) buf(gate_, T * Q);
  buf(att_, T * Q);
  project({{&L.wq, qg}, {&L.wk, buf(k_, T * KV)}, {&L.wv, buf(v_, T * KV)}}, h, qh, pool);
  const int64_t max_pos =
      step.tok_pos.empty() ? 0 : *std::max_element(step.tok_pos.begin(), step.tok_pos.end());
  (hp.kind(layer) == LayerKind::SlidingWindow ? rope_swa_ : rope_).fill_to(max_pos);
  over_tokens(pool, T, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) prepare_token(step, layer, t);
  });
  attend(step, layer, pool);
  if (hp.attn_output_gate) {
    over_tokens(pool, T, [&](int64_t t0, int64_t t1) {
      ops::sigmoid_gate(&att_[static_cast<size_t>(t0 * Q)], &gate_[static_cast<size_t>(t0 * Q)],
                        (t1 - t0) * Q);
    });
  }
  ops::matmul(L.wo, att_.data(), T, out, pool);
}

}  // namespace hearth
