#include "model/tensor_names.h"

#include <fmt/format.h>

namespace hearth {

std::string layer_tensor(int64_t layer, const char* suffix) {
  return fmt::format("blk.{}.{}", layer, suffix);
}

std::vector<TensorSpec> tensor_specs(const HParams& hp) {
  const int64_t e = hp.n_embd, q = hp.q_dim(), kv = hp.kv_dim(), ff = hp.n_ff;
  std::vector<TensorSpec> s;
  s.push_back({"token_embd.weight", {e, hp.n_vocab}, true, false});
  s.push_back({"output_norm.weight", {e}, false, false});
  s.push_back({"output.weight", {e, hp.n_vocab}, true, true});
  if (hp.arch == Arch::Llama) s.push_back({"rope_freqs.weight", {hp.n_rot / 2}, false, true});
  for (int64_t l = 0; l < hp.n_layer; ++l) {
    s.push_back({layer_tensor(l, "attn_norm.weight"), {e}, false, false});
    s.push_back({layer_tensor(l, "attn_q.weight"), {e, q}, true, false});
    s.push_back({layer_tensor(l, "attn_k.weight"), {e, kv}, true, false});
    s.push_back({layer_tensor(l, "attn_v.weight"), {e, kv}, true, false});
    if (hp.has_qkv_bias()) {
      s.push_back({layer_tensor(l, "attn_q.bias"), {q}, false, false});
      s.push_back({layer_tensor(l, "attn_k.bias"), {kv}, false, false});
      s.push_back({layer_tensor(l, "attn_v.bias"), {kv}, false, false});
    }
    if (hp.has_qk_norm()) {
      s.push_back({layer_tensor(l, "attn_q_norm.weight"), {hp.head_dim}, false, false});
      s.push_back({layer_tensor(l, "attn_k_norm.weight"), {hp.head_dim}, false, false});
    }
    s.push_back({layer_tensor(l, "attn_output.weight"), {q, e}, true, false});
    s.push_back({layer_tensor(l, "ffn_norm.weight"), {e}, false, false});
    s.push_back({layer_tensor(l, "ffn_gate.weight"), {e, ff}, true, false});
    s.push_back({layer_tensor(l, "ffn_up.weight"), {e, ff}, true, false});
    s.push_back({layer_tensor(l, "ffn_down.weight"), {ff, e}, true, false});
  }
  return s;
}

}  // namespace hearth
