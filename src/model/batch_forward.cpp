#include "model/batch_forward.h"

#include <algorithm>
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

namespace {

// Runs fn(t0, t1) over token ranges covering [0, T), on the pool when there are enough tokens to
// pay for a parallel region. The per-token steps are row-wise, so the split never changes a
// result.
template <typename Fn>
void over_tokens(ops::ThreadPool& pool, int64_t T, Fn&& fn) {
  constexpr int64_t kPerTask = 8;
  if (pool.size() == 1 || T < 2 * kPerTask) {
    fn(int64_t{0}, T);
    return;
  }
  pool.parallel_for((T + kPerTask - 1) / kPerTask,
                    [&](int64_t i, int) { fn(i * kPerTask, std::min(T, (i + 1) * kPerTask)); });
}

}  // namespace

std::vector<float> BatchForward::forward(std::span<const SeqBatch> batch, const KvArena& kv) {
  std::vector<float> logits;
  forward(batch, kv, logits);
  return logits;
}

void BatchForward::forward(std::span<const SeqBatch> batch, const KvArena& kv,
                           std::vector<float>& logits) {
  const HParams& hp = model_.hparams();
  const ModelWeights& w = model_.weights();
  if (kv.n_layer != hp.n_kv_layers() || kv.layout.n_kv_head != hp.n_head_kv ||
      kv.layout.head_dim != hp.head_dim)
    fail("KV arena shape does not match the model");

  if (model_.hparams().is_moe() || model_.hparams().has_recurrent_layers() ||
      model_.hparams().has_sliding_window() || model_.hparams().attn_output_gate ||
      model_.hparams().post_norms)
    fail("{}: this forward path does not run architecture '{}' yet", model_.file().name(),
         model_.hparams().arch_name);
  // Validate everything before touching the cache.
  int64_t T = 0, n_out = 0, max_pos = 0;
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
    max_pos = std::max(max_pos, s.pos0 + n - 1);
  }
  if (T == 0) {
    logits.clear();
    return;
  }

  const int64_t E = hp.n_embd, Q = hp.q_dim(), KV = hp.kv_dim(), F = hp.n_ff, hd = hp.head_dim;
  // Scratch kept between calls: no allocation (or page faults) per step once warm.
  auto buf = [](std::vector<float>& v, int64_t n) {
    v.resize(static_cast<size_t>(n));
    return v.data();
  };
  float *x = buf(x_, T * E), *h = buf(h_, T * E), *q = buf(q_, T * Q), *k = buf(k_, T * KV),
        *v = buf(v_, T * KV), *att = buf(att_, T * Q), *o = buf(o_, T * E), *g = buf(g_, T * F),
        *u = buf(u_, T * F);

  // Every token's position and KV block, for the per-token steps.
  tok_pos_.resize(static_cast<size_t>(T));
  tok_block_.resize(static_cast<size_t>(T));
  {
    size_t row = 0;
    for (const SeqBatch& s : batch)
      for (size_t t = 0; t < s.tokens.size(); ++t, ++row) {
        tok_pos_[row] = s.pos0 + static_cast<int64_t>(t);
        tok_block_[row] = s.blocks[static_cast<size_t>(tok_pos_[row] / bt)];
        ref::get_row(w.token_embd, s.tokens[t], &x[static_cast<int64_t>(row) * E]);
      }
  }
  const bool neox = hp.rope_layout == RopeLayout::Neox;
  const int64_t half = hp.n_rot / 2;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  rope_table(max_pos);  // filled up to the last position before threads read it
  const float* rope = rope_cache_.data();

  // Block pointer slots of every sequence, back to back (the same count in every layer).
  size_t n_ptrs = 0;
  for (const SeqBatch& s : batch)
    n_ptrs += static_cast<size_t>((s.pos0 + static_cast<int64_t>(s.tokens.size()) + bt - 1) / bt);
  k_ptrs_.resize(n_ptrs);
  v_ptrs_.resize(n_ptrs);

  // Each layer's per-token steps run as few parallel regions, fused around the matmuls:
  // [residual, norm, quantize] QKV [bias, q/k norm, RoPE, KV store] attention [quantize] O
  // [residual, norm, quantize] gate/up [SiLU·up, quantize] down. The FFN's residual add is
  // left to the next layer's first region (o still holds it), and after the last layer to the
  // rows that get logits.
  for (int64_t l = 0; l < hp.n_layer; ++l) {
    const LayerWeights& L = w.layers[static_cast<size_t>(l)];
    const TensorType at = ops::activation_type(L.wq.type);
    ops::prepare_activations(at, T, E, qx_);
    over_tokens(pool_, T, [&](int64_t t0, int64_t t1) {
      if (l > 0) ops::add_inplace(&x[t0 * E], &o[t0 * E], (t1 - t0) * E);
      ops::rmsnorm(&x[t0 * E], L.attn_norm.data(), &h[t0 * E], t1 - t0, E, hp.rms_eps);
      ops::quantize_activation_rows(h, t0, t1, qx_);
    });
    // Q, K and V read the same input: quantized once when their types agree.
    if (ops::activation_type(L.wk.type) == at && ops::activation_type(L.wv.type) == at) {
      const ops::MatmulOut qkv[] = {{&L.wq, q}, {&L.wk, k}, {&L.wv, v}};
      ops::matmul_group(qkv, qx_, pool_);
    } else {
      ops::matmul(L.wq, qx_, q, pool_);
      ops::matmul(L.wk, h, T, k, pool_);
      ops::matmul(L.wv, h, T, v, pool_);
    }
    over_tokens(pool_, T, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        float *qt = &q[t * Q], *kt = &k[t * KV], *vt = &v[t * KV];
        if (!L.bq.empty()) {
          ops::add_inplace(qt, L.bq.data(), Q);
          ops::add_inplace(kt, L.bk.data(), KV);
          ops::add_inplace(vt, L.bv.data(), KV);
        }
        if (!L.q_norm.empty()) {
          ops::rmsnorm(qt, L.q_norm.data(), qt, hp.n_head, hd, hp.rms_eps);
          ops::rmsnorm(kt, L.k_norm.data(), kt, hp.n_head_kv, hd, hp.rms_eps);
        }
        const int64_t pos = tok_pos_[static_cast<size_t>(t)];
        const float* cs = rope + pos * 2 * half;
        ops::rope(qt, hp.n_head, hd, hp.n_rot, cs, cs + half, neox);
        ops::rope(kt, hp.n_head_kv, hd, hp.n_rot, cs, cs + half, neox);
        const int32_t block = tok_block_[static_cast<size_t>(t)];
        ops::kv_store_token(kv.layout, kt, kv.k(block, l), pos % bt);
        ops::kv_store_token(kv.layout, vt, kv.v(block, l), pos % bt);
      }
    });
    // Every sequence's block pointers for this layer (one flat list), then one attention call.
    views_.clear();
    args_.clear();
    int64_t row = 0;
    size_t ptr0 = 0;
    for (const SeqBatch& s : batch) {
      const int64_t n = static_cast<int64_t>(s.tokens.size());
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
    ops::matmul(L.wo, att, T, o, pool_);

    const TensorType ft = ops::activation_type(L.w_gate.type);
    ops::prepare_activations(ft, T, E, qx_);
    over_tokens(pool_, T, [&](int64_t t0, int64_t t1) {
      ops::add_inplace(&x[t0 * E], &o[t0 * E], (t1 - t0) * E);
      ops::rmsnorm(&x[t0 * E], L.ffn_norm.data(), &h[t0 * E], t1 - t0, E, hp.rms_eps);
      ops::quantize_activation_rows(h, t0, t1, qx_);
    });
    if (ops::activation_type(L.w_up.type) == ft) {
      const ops::MatmulOut gate_up[] = {{&L.w_gate, g}, {&L.w_up, u}};
      ops::matmul_group(gate_up, qx_, pool_);
    } else {
      ops::matmul(L.w_gate, qx_, g, pool_);
      ops::matmul(L.w_up, h, T, u, pool_);
    }
    ops::prepare_activations(ops::activation_type(L.w_down.type), T, F, qx_);
    over_tokens(pool_, T, [&](int64_t t0, int64_t t1) {
      ops::silu_mul(&g[t0 * F], &u[t0 * F], (t1 - t0) * F);
      ops::quantize_activation_rows(g, t0, t1, qx_);
    });
    ops::matmul(L.w_down, qx_, o, pool_);
  }

  // Logits only where asked: the output matrix is the largest single read per token.
  logits.resize(static_cast<size_t>(n_out * hp.n_vocab));
  if (n_out == 0) return;
  int64_t row = 0, out = 0;
  for (const SeqBatch& s : batch) {
    const int64_t n = static_cast<int64_t>(s.tokens.size());
    const int64_t first = s.logits == Logits::All ? row : row + n - 1;
    const int64_t rows = s.logits == Logits::All ? n : s.logits == Logits::Last ? 1 : 0;
    if (rows > 0) {
      ops::add_inplace(&x[first * E], &o[first * E], rows * E);  // the last layer's residual
      ops::rmsnorm(&x[first * E], w.output_norm.data(), &h[out * E], rows, E, hp.rms_eps);
      out += rows;
    }
    row += n;
  }
  ops::matmul(w.output, h, n_out, logits.data(), pool_);
}

}  // namespace hearth
