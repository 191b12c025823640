#include "model/tensor_names.h"

#include <fmt/format.h>

namespace hearth {

std::string layer_tensor(int64_t layer, const char* suffix) {
  return fmt::format("blk.{}.{}", layer, suffix);
}

const char* output_norm_name(const HParams& hp) {
  // LFM2's final norm: llama.cpp's converter writes it under this name.
  return hp.arch == Arch::Lfm2 ? "token_embd_norm.weight" : "output_norm.weight";
}

namespace {

using Specs = std::vector<TensorSpec>;

TensorSpec mat(int64_t l, const char* suffix, std::vector<int64_t> ne) {
  return {layer_tensor(l, suffix), std::move(ne), true, false};
}
TensorSpec vec(int64_t l, const char* suffix, int64_t n) {
  return {layer_tensor(l, suffix), {n}, false, false};
}
// A small 2-D tensor that stays F32 in every file (routers, conv taps): llama-quantize skips it.
TensorSpec f32_mat(int64_t l, const char* suffix, std::vector<int64_t> ne) {
  TensorSpec t{layer_tensor(l, suffix), std::move(ne), false, false};
  t.f32_matrix = true;
  return t;
}

void attention(Specs& s, const HParams& hp, int64_t l) {
  const int64_t e = hp.n_embd, q = hp.q_dim(), kv = hp.kv_dim();
  s.push_back(mat(l, "attn_q.weight", {e, hp.attn_output_gate ? 2 * q : q}));
  s.push_back(mat(l, "attn_k.weight", {e, kv}));
  s.push_back(mat(l, "attn_v.weight", {e, kv}));
  if (hp.has_qkv_bias()) {
    s.push_back(vec(l, "attn_q.bias", q));
    s.push_back(vec(l, "attn_k.bias", kv));
    s.push_back(vec(l, "attn_v.bias", kv));
  }
  if (hp.has_qk_norm()) {
    s.push_back(vec(l, "attn_q_norm.weight", hp.head_dim));
    s.push_back(vec(l, "attn_k_norm.weight", hp.head_dim));
  }
  s.push_back(mat(l, "attn_output.weight", {q, e}));
}

void delta_net(Specs& s, const HParams& hp, int64_t l) {
  const int64_t e = hp.n_embd, ch = hp.ssm_conv_channels(), inner = hp.ssm_inner(),
                nv = hp.ssm_n_v_heads;
  s.push_back(mat(l, "attn_qkv.weight", {e, ch}));
  s.push_back(mat(l, "attn_gate.weight", {e, inner}));
  s.push_back(f32_mat(l, "ssm_conv1d.weight", {hp.ssm_conv_kernel, ch}));
  s.push_back(vec(l, "ssm_dt.bias", nv));
  s.push_back(vec(l, "ssm_a", nv));
  s.push_back(mat(l, "ssm_beta.weight", {e, nv}));
  s.push_back(mat(l, "ssm_alpha.weight", {e, nv}));
  s.push_back(vec(l, "ssm_norm.weight", hp.ssm_head_dim));
  s.push_back(mat(l, "ssm_out.weight", {inner, e}));
}

void short_conv(Specs& s, const HParams& hp, int64_t l) {
  const int64_t e = hp.n_embd;
  s.push_back(f32_mat(l, "shortconv.conv.weight", {hp.shortconv_l_cache, e}));
  s.push_back(mat(l, "shortconv.in_proj.weight", {e, 3 * e}));
  s.push_back(mat(l, "shortconv.out_proj.weight", {e, e}));
}

void ffn(Specs& s, const HParams& hp, int64_t l) {
  const int64_t e = hp.n_embd;
  if (!hp.is_moe()) {
    s.push_back(mat(l, "ffn_gate.weight", {e, hp.n_ff}));
    s.push_back(mat(l, "ffn_up.weight", {e, hp.n_ff}));
    s.push_back(mat(l, "ffn_down.weight", {hp.n_ff, e}));
    return;
  }
  const int64_t x = hp.n_expert, f = hp.n_ff_exp;
  s.push_back(f32_mat(l, "ffn_gate_inp.weight", {e, x}));
  s.push_back(mat(l, "ffn_gate_exps.weight", {e, f, x}));
  s.push_back(mat(l, "ffn_up_exps.weight", {e, f, x}));
  s.push_back(mat(l, "ffn_down_exps.weight", {f, e, x}));
  if (hp.n_ff_shexp > 0) {
    s.push_back(vec(l, "ffn_gate_inp_shexp.weight", e));
    s.push_back(mat(l, "ffn_gate_shexp.weight", {e, hp.n_ff_shexp}));
    s.push_back(mat(l, "ffn_up_shexp.weight", {e, hp.n_ff_shexp}));
    s.push_back(mat(l, "ffn_down_shexp.weight", {hp.n_ff_shexp, e}));
  }
}

}  // namespace

std::vector<TensorSpec> tensor_specs(const HParams& hp) {
  const int64_t e = hp.n_embd;
  Specs s;
  s.push_back({"token_embd.weight", {e, hp.n_vocab}, true, false});
  s.push_back({output_norm_name(hp), {e}, false, false});
  s.push_back({"output.weight", {e, hp.n_vocab}, true, true});
  if (hp.arch == Arch::Llama) s.push_back({"rope_freqs.weight", {hp.n_rot / 2}, false, true});
  const bool qwen35 = hp.arch == Arch::Qwen35 || hp.arch == Arch::Qwen35Moe;
  for (int64_t l = 0; l < hp.n_layer; ++l) {
    s.push_back(vec(l, "attn_norm.weight", e));
    switch (hp.kind(l)) {
      case LayerKind::Attention:
      case LayerKind::SlidingWindow:
        attention(s, hp, l);
        break;
      case LayerKind::DeltaNet:
        delta_net(s, hp, l);
        break;
      case LayerKind::ShortConv:
        short_conv(s, hp, l);
        break;
    }
    // qwen35 names its pre-FFN norm post_attention_norm; gemma3 has both and post_ffw_norm.
    if (qwen35) {
      s.push_back(vec(l, "post_attention_norm.weight", e));
    } else {
      s.push_back(vec(l, "ffn_norm.weight", e));
    }
    if (hp.post_norms) {
      s.push_back(vec(l, "post_attention_norm.weight", e));
      s.push_back(vec(l, "post_ffw_norm.weight", e));
    }
    ffn(s, hp, l);
  }
  return s;
}

}  // namespace hearth
