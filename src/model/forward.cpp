#include "model/forward.h"

#include <cmath>
#include <cstring>

#include "ops/elementwise.h"
#include "util/error.h"

namespace hearth {

Forward::Forward(const Model& model, ForwardOptions options, ops::ThreadPool& pool)
    : model_(model), opt_(options), pool_(pool) {
  const HParams& hp = model.hparams();
  if (opt_.n_ctx <= 0) fail("context size must be positive, got {}", opt_.n_ctx);
  if (opt_.kv_block_tokens <= 0) fail("KV block size must be positive");
  if (opt_.kv_type != TensorType::F32 && opt_.kv_type != TensorType::F16 &&
      opt_.kv_type != TensorType::Q8_0)
    fail("KV type {} is not supported (F32, F16, Q8_0)", type_name(opt_.kv_type));
  if (opt_.kv_type == TensorType::Q8_0 && hp.head_dim % 32 != 0)
    fail("Q8_0 KV needs a head size that is a multiple of 32 (this model: {})", hp.head_dim);
  kv_layout_.type = opt_.kv_type;
  kv_layout_.n_kv_head = hp.n_head_kv;
  kv_layout_.head_dim = hp.head_dim;
  kv_layout_.block_tokens = opt_.kv_block_tokens;
  rope_ = model.rope_config();
  kv_.resize(static_cast<size_t>(hp.n_layer));
}

size_t Forward::kv_bytes_per_token() const {
  return 2 * kv_layout_.token_bytes() * static_cast<size_t>(model_.hparams().n_layer);
}

void Forward::truncate(int64_t n) {
  if (n < 0 || n > n_past_) fail("cannot truncate a cache of {} positions to {}", n_past_, n);
  n_past_ = n;
}

void Forward::ensure_capacity(int64_t n_tokens) {
  const int64_t bt = opt_.kv_block_tokens;
  const size_t need = static_cast<size_t>((n_tokens + bt - 1) / bt);
  for (LayerKv& l : kv_) {
    while (l.k_blocks.size() < need) {
      l.k_blocks.emplace_back(new uint8_t[kv_layout_.block_bytes()]());
      l.v_blocks.emplace_back(new uint8_t[kv_layout_.block_bytes()]());
      l.k_ptrs.push_back(l.k_blocks.back().get());
      l.v_ptrs.push_back(l.v_blocks.back().get());
    }
  }
}

uint8_t* Forward::kv_slot(std::vector<std::unique_ptr<uint8_t[]>>& blocks, int64_t pos) const {
  const int64_t bt = opt_.kv_block_tokens;
  return blocks[static_cast<size_t>(pos / bt)].get() +
         static_cast<size_t>(pos % bt) * kv_layout_.token_bytes();
}

const float* Forward::rope_table(int64_t pos) {
  const size_t half = static_cast<size_t>(rope_.n_rot / 2);
  while (rope_cache_.size() < (static_cast<size_t>(pos) + 1) * 2 * half) {
    const int64_t p = static_cast<int64_t>(rope_cache_.size() / (2 * half));
    rope_cache_.resize(rope_cache_.size() + 2 * half);
    float* t = rope_cache_.data() + static_cast<size_t>(p) * 2 * half;
    ref::rope_cos_sin(rope_, p, t, t + half);
  }
  return rope_cache_.data() + static_cast<size_t>(pos) * 2 * half;
}

void Forward::matmul(const MatrixView& w, const float* x, int64_t n_tok, float* y) {
  ops::quantize_activations(ops::activation_type(w.type), x, n_tok, w.n_cols, qx_);
  ops::matmul(w, qx_, y, pool_);
}

std::vector<float> Forward::eval(std::span<const int32_t> tokens, bool all_logits) {
  const HParams& hp = model_.hparams();
  const ModelWeights& w = model_.weights();
  const int64_t T = static_cast<int64_t>(tokens.size());
  if (T == 0) fail("eval: empty batch");
  if (n_past_ + T > opt_.n_ctx)
    fail("context is full: {} cached + {} new tokens exceed the context size {}", n_past_, T,
         opt_.n_ctx);
  for (int32_t id : tokens)
    if (id < 0 || id >= hp.n_vocab)
      fail("token id {} is out of range (vocabulary {})", id, hp.n_vocab);
  ensure_capacity(n_past_ + T);

  const int64_t E = hp.n_embd, Q = hp.q_dim(), KV = hp.kv_dim(), F = hp.n_ff, hd = hp.head_dim;
  auto buf = [](int64_t n) { return std::vector<float>(static_cast<size_t>(n)); };
  std::vector<float> x = buf(T * E), h = buf(T * E), q = buf(T * Q), k = buf(T * KV),
                     v = buf(T * KV), att = buf(T * Q), o = buf(T * E), g = buf(T * F),
                     u = buf(T * F);

  for (int64_t t = 0; t < T; ++t)
    ref::get_row(w.token_embd, tokens[static_cast<size_t>(t)], &x[t * E]);
  const bool neox = hp.rope_layout == RopeLayout::Neox;
  const int64_t half = hp.n_rot / 2;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));

  for (int64_t l = 0; l < hp.n_layer; ++l) {
    const LayerWeights& L = w.layers[static_cast<size_t>(l)];
    LayerKv& cache = kv_[static_cast<size_t>(l)];
    ops::rmsnorm(x.data(), L.attn_norm.data(), h.data(), T, E, hp.rms_eps);
    // Q, K and V read the same input: quantize it once when their types agree.
    const TensorType at = ops::activation_type(L.wq.type);
    ops::quantize_activations(at, h.data(), T, E, qx_);
    ops::matmul(L.wq, qx_, q.data(), pool_);
    if (ops::activation_type(L.wk.type) == at && ops::activation_type(L.wv.type) == at) {
      ops::matmul(L.wk, qx_, k.data(), pool_);
      ops::matmul(L.wv, qx_, v.data(), pool_);
    } else {
      matmul(L.wk, h.data(), T, k.data());
      matmul(L.wv, h.data(), T, v.data());
    }
    for (int64_t t = 0; t < T; ++t) {
      float* qt = &q[t * Q];
      float* kt = &k[t * KV];
      float* vt = &v[t * KV];
      if (!L.bq.empty()) {
        ops::add_inplace(qt, L.bq.data(), Q);
        ops::add_inplace(kt, L.bk.data(), KV);
        ops::add_inplace(vt, L.bv.data(), KV);
      }
      if (!L.q_norm.empty()) {
        ops::rmsnorm(qt, L.q_norm.data(), qt, hp.n_head, hd, hp.rms_eps);
        ops::rmsnorm(kt, L.k_norm.data(), kt, hp.n_head_kv, hd, hp.rms_eps);
      }
      const int64_t pos = n_past_ + t;
      const float* cs = rope_table(pos);
      ops::rope(qt, hp.n_head, hd, hp.n_rot, cs, cs + half, neox);
      ops::rope(kt, hp.n_head_kv, hd, hp.n_rot, cs, cs + half, neox);
      ops::kv_encode_token(kv_layout_, kt, kv_slot(cache.k_blocks, pos));
      ops::kv_encode_token(kv_layout_, vt, kv_slot(cache.v_blocks, pos));
    }
    ops::KvSeqView view{kv_layout_, cache.k_ptrs.data(), cache.v_ptrs.data(), n_past_ + T};
    ops::AttentionArgs args{q.data(), T, hp.n_head, n_past_, scale, att.data()};
    ops::attention(args, view, pool_);
    matmul(L.wo, att.data(), T, o.data());
    ops::add_inplace(x.data(), o.data(), T * E);

    ops::rmsnorm(x.data(), L.ffn_norm.data(), h.data(), T, E, hp.rms_eps);
    const TensorType ft = ops::activation_type(L.w_gate.type);
    ops::quantize_activations(ft, h.data(), T, E, qx_);
    ops::matmul(L.w_gate, qx_, g.data(), pool_);
    if (ops::activation_type(L.w_up.type) == ft) {
      ops::matmul(L.w_up, qx_, u.data(), pool_);
    } else {
      matmul(L.w_up, h.data(), T, u.data());
    }
    ops::silu_mul(g.data(), u.data(), T * F);
    matmul(L.w_down, g.data(), T, o.data());
    ops::add_inplace(x.data(), o.data(), T * E);
  }
  n_past_ += T;

  // Logits only where needed: the output matrix is the largest single read per token.
  const int64_t first = all_logits ? 0 : T - 1, n_out = T - first;
  ops::rmsnorm(&x[first * E], w.output_norm.data(), h.data(), n_out, E, hp.rms_eps);
  std::vector<float> logits = buf(n_out * hp.n_vocab);
  matmul(w.output, h.data(), n_out, logits.data());
  return logits;
}

}  // namespace hearth
