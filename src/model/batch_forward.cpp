#include "model/batch_forward.h"

#include <cmath>

#include "ops/attention.h"
#include "ops/elementwise.h"
#include "util/error.h"

namespace hearth {

BatchForward::BatchForward(const Model& model, ops::ThreadPool& pool)
    : model_(model), pool_(pool), rope_(model.rope_config()) {}

const float* BatchForward::rope_table(int64_t pos) {
  const size_t half = static_cast<size_t>(rope_.n_rot / 2);
  while (rope_cache_.size() < (static_cast<size_t>(pos) + 1) * 2 * half) {
    const int64_t p = static_cast<int64_t>(rope_cache_.size() / (2 * half));
    rope_cache_.resize(rope_cache_.size() + 2 * half);
    float* t = rope_cache_.data() + static_cast<size_t>(p) * 2 * half;
    ref::rope_cos_sin(rope_, p, t, t + half);
  }
  return rope_cache_.data() + static_cast<size_t>(pos) * 2 * half;
}

void BatchForward::matmul(const MatrixView& w, const float* x, int64_t n_tok, float* y) {
  ops::quantize_activations(ops::activation_type(w.type), x, n_tok, w.n_cols, qx_);
  ops::matmul(w, qx_, y, pool_);
}

std::vector<float> BatchForward::forward(std::span<const SeqBatch> batch, const KvArena& kv) {
  const HParams& hp = model_.hparams();
  const ModelWeights& w = model_.weights();
  if (kv.n_layer != hp.n_layer || kv.layout.n_kv_head != hp.n_head_kv ||
      kv.layout.head_dim != hp.head_dim)
    fail("KV arena shape does not match the model");

  // Validate everything before touching the cache.
  int64_t T = 0, n_out = 0;
  const int64_t bt = kv.layout.block_tokens;
  for (const SeqBatch& s : batch) {
    const int64_t n = static_cast<int64_t>(s.tokens.size());
    if (n == 0) fail("forward: a sequence in the batch has no tokens");
    if (s.pos0 < 0) fail("forward: negative position {}", s.pos0);
    if (static_cast<int64_t>(s.blocks.size()) * bt < s.pos0 + n)
      fail("forward: {} blocks of {} tokens cannot hold positions up to {}", s.blocks.size(), bt,
           s.pos0 + n);
    for (int32_t b : s.blocks)
      if (b < 0 || b >= kv.n_blocks) fail("forward: block id {} is out of range", b);
    for (int32_t id : s.tokens)
      if (id < 0 || id >= hp.n_vocab)
        fail("token id {} is out of range (vocabulary {})", id, hp.n_vocab);
    T += n;
    n_out += s.logits == Logits::All ? n : s.logits == Logits::Last ? 1 : 0;
  }
  if (T == 0) return {};

  const int64_t E = hp.n_embd, Q = hp.q_dim(), KV = hp.kv_dim(), F = hp.n_ff, hd = hp.head_dim;
  auto buf = [](int64_t n) { return std::vector<float>(static_cast<size_t>(n)); };
  std::vector<float> x = buf(T * E), h = buf(T * E), q = buf(T * Q), k = buf(T * KV),
                     v = buf(T * KV), att = buf(T * Q), o = buf(T * E), g = buf(T * F),
                     u = buf(T * F);

  {
    int64_t row = 0;
    for (const SeqBatch& s : batch)
      for (int32_t id : s.tokens) ref::get_row(w.token_embd, id, &x[row++ * E]);
  }
  const bool neox = hp.rope_layout == RopeLayout::Neox;
  const int64_t half = hp.n_rot / 2;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));

  // Block pointer slots of every sequence, back to back (the same count in every layer).
  size_t n_ptrs = 0;
  for (const SeqBatch& s : batch)
    n_ptrs += static_cast<size_t>((s.pos0 + static_cast<int64_t>(s.tokens.size()) + bt - 1) / bt);
  k_ptrs_.resize(n_ptrs);
  v_ptrs_.resize(n_ptrs);

  for (int64_t l = 0; l < hp.n_layer; ++l) {
    const LayerWeights& L = w.layers[static_cast<size_t>(l)];
    ops::rmsnorm(x.data(), L.attn_norm.data(), h.data(), T, E, hp.rms_eps);
    // Q, K and V read the same input: quantize it once when their types agree.
    const TensorType at = ops::activation_type(L.wq.type);
    ops::quantize_activations(at, h.data(), T, E, qx_);
    if (ops::activation_type(L.wk.type) == at && ops::activation_type(L.wv.type) == at) {
      const ops::MatmulOut qkv[] = {{&L.wq, q.data()}, {&L.wk, k.data()}, {&L.wv, v.data()}};
      ops::matmul_group(qkv, qx_, pool_);
    } else {
      ops::matmul(L.wq, qx_, q.data(), pool_);
      matmul(L.wk, h.data(), T, k.data());
      matmul(L.wv, h.data(), T, v.data());
    }
    if (!L.bq.empty()) {
      for (int64_t t = 0; t < T; ++t) {
        ops::add_inplace(&q[t * Q], L.bq.data(), Q);
        ops::add_inplace(&k[t * KV], L.bk.data(), KV);
        ops::add_inplace(&v[t * KV], L.bv.data(), KV);
      }
    }
    if (!L.q_norm.empty()) {
      ops::rmsnorm(q.data(), L.q_norm.data(), q.data(), T * hp.n_head, hd, hp.rms_eps);
      ops::rmsnorm(k.data(), L.k_norm.data(), k.data(), T * hp.n_head_kv, hd, hp.rms_eps);
    }
    // Every sequence's block pointers for this layer (one flat list), then one attention call.
    views_.clear();
    args_.clear();
    int64_t row = 0;
    size_t ptr0 = 0;
    for (const SeqBatch& s : batch) {
      const int64_t n = static_cast<int64_t>(s.tokens.size());
      for (int64_t t = 0; t < n; ++t) {
        const int64_t pos = s.pos0 + t;
        float* qt = &q[(row + t) * Q];
        float* kt = &k[(row + t) * KV];
        const float* cs = rope_table(pos);
        ops::rope(qt, hp.n_head, hd, hp.n_rot, cs, cs + half, neox);
        ops::rope(kt, hp.n_head_kv, hd, hp.n_rot, cs, cs + half, neox);
        const int32_t block = s.blocks[static_cast<size_t>(pos / bt)];
        ops::kv_store_token(kv.layout, kt, kv.k(block, l), pos % bt);
        ops::kv_store_token(kv.layout, &v[(row + t) * KV], kv.v(block, l), pos % bt);
      }
      const size_t nb = static_cast<size_t>((s.pos0 + n + bt - 1) / bt);
      for (size_t i = 0; i < nb; ++i) {
        k_ptrs_[ptr0 + i] = kv.k(s.blocks[i], l);
        v_ptrs_[ptr0 + i] = kv.v(s.blocks[i], l);
      }
      views_.push_back({kv.layout, k_ptrs_.data() + ptr0, v_ptrs_.data() + ptr0, s.pos0 + n});
      args_.push_back({&q[row * Q], n, hp.n_head, s.pos0, scale, &att[row * Q]});
      ptr0 += nb;
      row += n;
    }
    ops::attention_batch(args_, views_, pool_);
    matmul(L.wo, att.data(), T, o.data());
    ops::add_inplace(x.data(), o.data(), T * E);

    ops::rmsnorm(x.data(), L.ffn_norm.data(), h.data(), T, E, hp.rms_eps);
    const TensorType ft = ops::activation_type(L.w_gate.type);
    ops::quantize_activations(ft, h.data(), T, E, qx_);
    if (ops::activation_type(L.w_up.type) == ft) {
      const ops::MatmulOut gate_up[] = {{&L.w_gate, g.data()}, {&L.w_up, u.data()}};
      ops::matmul_group(gate_up, qx_, pool_);
    } else {
      ops::matmul(L.w_gate, qx_, g.data(), pool_);
      matmul(L.w_up, h.data(), T, u.data());
    }
    ops::silu_mul(g.data(), u.data(), T * F);
    matmul(L.w_down, g.data(), T, o.data());
    ops::add_inplace(x.data(), o.data(), T * E);
  }

  // Logits only where asked: the output matrix is the largest single read per token.
  std::vector<float> logits = buf(n_out * hp.n_vocab);
  if (n_out == 0) return logits;
  int64_t row = 0, out = 0;
  for (const SeqBatch& s : batch) {
    const int64_t n = static_cast<int64_t>(s.tokens.size());
    if (s.logits == Logits::All) {
      ops::rmsnorm(&x[row * E], w.output_norm.data(), &h[out * E], n, E, hp.rms_eps);
      out += n;
    } else if (s.logits == Logits::Last) {
      ops::rmsnorm(&x[(row + n - 1) * E], w.output_norm.data(), &h[out * E], 1, E, hp.rms_eps);
      out += 1;
    }
    row += n;
  }
  matmul(w.output, h.data(), n_out, logits.data());
  return logits;
}

}  // namespace hearth
