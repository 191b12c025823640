#include "model/weights.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>

#include "model/tensor_names.h"
#include "ops/cpu_features.h"
#include "ops/packed_rows.h"
#include "quant/dequantize.h"
#include "util/error.h"
#include "util/mapped_file.h"

namespace hearth {

std::unique_ptr<Model> Model::load(const std::string& path) {
  return from_file(gguf::File::open(path));
}

std::unique_ptr<Model> Model::from_file(gguf::File file) {
  std::unique_ptr<Model> m(new Model(std::move(file)));
  m->hp_ = HParams::from_gguf(m->file_);
  m->bind();
  m->move_to_huge_pages();
  return m;
}

uint64_t Model::weight_bytes() const {
  uint64_t n = 0;
  for (const auto& t : file_.tensors()) n += t.nbytes;
  return n;
}

ref::RopeConfig Model::rope_config() const {
  ref::RopeConfig r;
  r.n_rot = hp_.n_rot;
  r.freq_base = hp_.rope_freq_base;
  r.freq_scale = hp_.rope_freq_scale;
  r.ext_factor = hp_.yarn_ext_factor;
  r.attn_factor = hp_.yarn_attn_factor;
  r.beta_fast = hp_.yarn_beta_fast;
  r.beta_slow = hp_.yarn_beta_slow;
  r.orig_ctx = hp_.rope_orig_ctx;
  r.freq_factors = w_.rope_freqs.empty() ? nullptr : w_.rope_freqs.data();
  return r;
}

namespace {

const gguf::TensorInfo* lookup(const gguf::File& f, const TensorSpec& spec, const HParams& hp) {
  const gguf::TensorInfo* t = f.find_tensor(spec.name);
  if (t == nullptr) {
    if (spec.optional) return nullptr;
    fail("{}: missing tensor '{}' required by architecture '{}'", f.name(), spec.name,
         hp.arch_name);
  }
  bool ok = t->n_dims >= 1 && static_cast<size_t>(t->n_dims) <= std::max<size_t>(spec.ne.size(), 1);
  for (size_t i = 0; ok && i < 4; ++i) ok = t->ne[i] == (i < spec.ne.size() ? spec.ne[i] : 1);
  if (!ok) {
    std::string want = "[";
    for (size_t i = 0; i < spec.ne.size(); ++i)
      want += (i ? ", " : "") + std::to_string(spec.ne[i]);
    fail("{}: tensor '{}' has shape {}, expected {}]", f.name(), spec.name, t->shape_string(),
         want);
  }
  if (!can_dequantize(t->type))
    fail("{}: tensor '{}' has type {}, which this build cannot compute with", f.name(), spec.name,
         type_name(t->type));
  if (t->data == nullptr) fail("{}: tensor '{}' has no data", f.name(), spec.name);
  return t;
}

MatrixView matrix(const gguf::TensorInfo& t) {
  MatrixView m;
  m.name = t.name;
  m.type = t.type;
  m.data = t.data;
  m.n_cols = t.ne[0];
  m.n_rows = t.ne[1];
  m.row_stride = row_bytes(t.type, t.ne[0]);
  return m;
}

std::vector<float> vec(const gguf::TensorInfo& t) {
  std::vector<float> v(static_cast<size_t>(t.n_elements()));
  dequantize_row(t.type, t.data, v.data(), t.n_elements());
  return v;
}

// Expert e of a 3-D tensor [in, out, n_expert]: the e-th contiguous [out x in] matrix.
std::vector<MatrixView> experts(const gguf::TensorInfo& t) {
  std::vector<MatrixView> out;
  MatrixView m = matrix(t);
  const size_t bytes = m.bytes();
  for (int64_t e = 0; e < t.ne[2]; ++e) {
    MatrixView x = m;
    x.data = m.data + static_cast<size_t>(e) * bytes;
    x.name = fmt::format("{}[{}]", t.name, e);
    out.push_back(x);
  }
  return out;
}

}  // namespace

std::vector<MatrixView*> LayerWeights::matrices() {
  std::vector<MatrixView*> out;
  for (MatrixView* m :
       {&wq, &wk, &wv, &wo, &w_gate, &w_up, &w_down, &router, &gate_shexp, &up_shexp, &down_shexp,
        &ssm_qkv, &ssm_gate, &ssm_beta, &ssm_alpha, &ssm_out, &conv_in, &conv_out})
    if (m->data != nullptr) out.push_back(m);
  for (auto* v : {&gate_exps, &up_exps, &down_exps})
    for (MatrixView& m : *v) out.push_back(&m);
  return out;
}

std::vector<const MatrixView*> LayerWeights::matrices() const {
  const auto all = const_cast<LayerWeights*>(this)->matrices();  // reads only
  return {all.begin(), all.end()};
}

// Gemma 3's local layers rotate with their own base and no context scaling: the file's rope
// scaling (linear x8 in Gemma-3-4B and larger) stretches only the global layers' positions.
ref::RopeConfig Model::rope_config_swa() const {
  ref::RopeConfig r = rope_config();
  if (!hp_.has_sliding_window()) return r;
  r.freq_base = hp_.rope_freq_base_swa;
  r.freq_scale = 1.0f;
  r.ext_factor = 0.0f;
  r.attn_factor = 1.0f;
  return r;
}

namespace {

using Found = std::map<std::string, const gguf::TensorInfo*>;

void bind_attention(LayerWeights& L, const HParams& hp, const Found& found, int64_t l) {
  auto get = [&](const char* suffix) -> const gguf::TensorInfo& {
    return *found.at(layer_tensor(l, suffix));
  };
  L.wq = matrix(get("attn_q.weight"));
  L.wk = matrix(get("attn_k.weight"));
  L.wv = matrix(get("attn_v.weight"));
  L.wo = matrix(get("attn_output.weight"));
  if (hp.has_qkv_bias()) {
    L.bq = vec(get("attn_q.bias"));
    L.bk = vec(get("attn_k.bias"));
    L.bv = vec(get("attn_v.bias"));
  }
  if (hp.has_qk_norm()) {
    L.q_norm = vec(get("attn_q_norm.weight"));
    L.k_norm = vec(get("attn_k_norm.weight"));
  }
}

void bind_mixer(LayerWeights& L, const HParams& hp, const Found& found, int64_t l) {
  auto get = [&](const char* suffix) -> const gguf::TensorInfo& {
    return *found.at(layer_tensor(l, suffix));
  };
  switch (hp.kind(l)) {
    case LayerKind::Attention:
    case LayerKind::SlidingWindow:
      bind_attention(L, hp, found, l);
      break;
    case LayerKind::DeltaNet:
      L.ssm_qkv = matrix(get("attn_qkv.weight"));
      L.ssm_gate = matrix(get("attn_gate.weight"));
      L.ssm_beta = matrix(get("ssm_beta.weight"));
      L.ssm_alpha = matrix(get("ssm_alpha.weight"));
      L.ssm_out = matrix(get("ssm_out.weight"));
      L.ssm_conv = vec(get("ssm_conv1d.weight"));
      L.ssm_dt_bias = vec(get("ssm_dt.bias"));
      L.ssm_a = vec(get("ssm_a"));
      L.ssm_norm = vec(get("ssm_norm.weight"));
      break;
    case LayerKind::ShortConv:
      L.conv_in = matrix(get("shortconv.in_proj.weight"));
      L.conv_out = matrix(get("shortconv.out_proj.weight"));
      L.conv = vec(get("shortconv.conv.weight"));
      break;
  }
}

void bind_ffn(LayerWeights& L, const HParams& hp, const Found& found, int64_t l) {
  auto get = [&](const char* suffix) -> const gguf::TensorInfo& {
    return *found.at(layer_tensor(l, suffix));
  };
  const bool qwen35 = hp.arch == Arch::Qwen35 || hp.arch == Arch::Qwen35Moe;
  L.ffn_norm = vec(get(qwen35 ? "post_attention_norm.weight" : "ffn_norm.weight"));
  if (hp.post_norms) {
    L.post_attn_norm = vec(get("post_attention_norm.weight"));
    L.post_ffw_norm = vec(get("post_ffw_norm.weight"));
  }
  if (!hp.is_moe()) {
    L.w_gate = matrix(get("ffn_gate.weight"));
    L.w_up = matrix(get("ffn_up.weight"));
    L.w_down = matrix(get("ffn_down.weight"));
    return;
  }
  L.router = matrix(get("ffn_gate_inp.weight"));
  L.gate_exps = experts(get("ffn_gate_exps.weight"));
  L.up_exps = experts(get("ffn_up_exps.weight"));
  L.down_exps = experts(get("ffn_down_exps.weight"));
  if (hp.n_ff_shexp > 0) {
    L.gate_inp_shexp = vec(get("ffn_gate_inp_shexp.weight"));
    L.gate_shexp = matrix(get("ffn_gate_shexp.weight"));
    L.up_shexp = matrix(get("ffn_up_shexp.weight"));
    L.down_shexp = matrix(get("ffn_down_shexp.weight"));
  }
}

}  // namespace

void Model::bind() {
  Found found;
  for (const TensorSpec& spec : tensor_specs(hp_)) found[spec.name] = lookup(file_, spec, hp_);

  w_.token_embd = matrix(*found.at("token_embd.weight"));
  w_.output_norm = vec(*found.at(output_norm_name(hp_)));
  if (const auto* out = found.at("output.weight")) {
    w_.output = matrix(*out);
  } else {
    w_.output = w_.token_embd;
    w_.tied_output = true;
  }
  if (auto it = found.find("rope_freqs.weight"); it != found.end() && it->second)
    w_.rope_freqs = vec(*it->second);

  w_.layers.resize(static_cast<size_t>(hp_.n_layer));
  for (int64_t l = 0; l < hp_.n_layer; ++l) {
    LayerWeights& L = w_.layers[static_cast<size_t>(l)];
    L.attn_norm = vec(*found.at(layer_tensor(l, "attn_norm.weight")));
    bind_mixer(L, hp_, found, l);
    bind_ffn(L, hp_, found, l);
  }
}

}  // namespace hearth

namespace hearth {

void Model::move_to_huge_pages() {
  if (ops::simd_level() < ops::SimdLevel::Avx2) return;
  if (const char* e = std::getenv("HEARTH_REPACK"); e != nullptr && std::string(e) == "0") return;
  // Every matrix a decode step streams moves into huge pages: the kernels' packed layout where
  // there is one (ops/packed_rows.h, F16 and BF16 included), else the stored bytes as they are
  // (F32, Q4_1, ...). With 4 KiB pages a TLB miss per page costs decode speed (measured:
  // Qwen3-0.6B Q8_0 41 -> 49 tok/s repacked; F16 copied: 31.4 -> 37.2 tok/s).
  std::vector<MatrixView*> todo;
  for (LayerWeights& L : w_.layers)
    for (MatrixView* m : L.matrices())
      if (m->n_rows > 0) todo.push_back(m);
  if (w_.output.n_rows > 0) todo.push_back(&w_.output);  // tied: token_embd keeps the file's
  if (todo.empty()) return;
  auto packs = [](const MatrixView& m) {
    return ops::packable(m.type) && m.n_cols % ops::packed_block_cols(m.type) == 0;
  };
  // Bytes of rows [0, r) in m's new home; each home starts on a cache line.
  auto bytes_to = [&](const MatrixView& m, int64_t r) {
    return packs(m) ? ops::packed_bytes(m.type, r, m.n_cols)
                    : m.row_stride * static_cast<size_t>(r);
  };
  auto home_bytes = [&](const MatrixView& m) { return (bytes_to(m, m.n_rows) + 63) / 64 * 64; };

  // Work items of up to kChunkRows rows (whole groups of 8), so that each one's mapped pages
  // can be given back as soon as it is copied: the copy replaces them rather than adding to
  // them, even at the peak.
  constexpr int64_t kChunkRows = 1024;
  struct Item {
    MatrixView src;  // rows [r, r + n) of a matrix
    uint8_t* dst;
    bool pack;
  };
  std::vector<Item> items;
  std::vector<uint8_t*> homes;
  size_t total = 0;
  for (const MatrixView* m : todo) total += home_bytes(*m);
  packed_ = AnonymousMemory::accounted(total, "weights");
  size_t off = 0;
  for (MatrixView* m : todo) {
    uint8_t* home = packed_.data() + off;
    for (int64_t r = 0; r < m->n_rows; r += kChunkRows) {
      MatrixView part = *m;
      part.data = m->row(r);
      part.n_rows = std::min(kChunkRows, m->n_rows - r);
      items.push_back({part, home + bytes_to(*m, r), packs(*m)});
    }
    homes.push_back(home);
    off += home_bytes(*m);
  }
  // Page faults and the copy split over a few threads (the model has no pool yet).
  const bool drop = file_.mapped();
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < items.size();) {
      const Item& it = items[i];
      const size_t bytes = it.src.bytes();
      if (it.pack)
        ops::pack_rows(it.src, it.dst);
      else
        std::memcpy(it.dst, it.src.data, bytes);
      // A tied output's rows are still looked up as embeddings: they come back a page at a time.
      if (drop) MappedFile::drop_pages(it.src.data, bytes);
    }
  };
  const unsigned n_threads = std::clamp(std::thread::hardware_concurrency(), 1u, 4u);
  std::vector<std::thread> threads;
  for (unsigned t = 1; t < n_threads; ++t) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  // Only now: the copies read the mapping through the views above.
  for (size_t i = 0; i < todo.size(); ++i) {
    if (packs(*todo[i]))
      todo[i]->packed = homes[i];
    else
      todo[i]->data = homes[i];
  }
}

}  // namespace hearth
