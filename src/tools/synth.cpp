#include "tools/synth.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <thread>

#include "gguf/writer.h"
#include "model/tensor_names.h"
#include "quant/quantize.h"
#include "util/error.h"

namespace hearth {
namespace {

// splitmix64: seeds independent streams per (tensor, row) so output does not depend on threads.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t hash_name(const std::string& s) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

// Fills n normal(mean, sigma) values from a stream seeded by `seed` (Box–Muller).
void fill_normal(float* out, int64_t n, uint64_t seed, float mean, float sigma) {
  uint64_t state = seed;
  auto uniform = [&] {  // (0, 1]
    state = mix(state);
    return (static_cast<double>(state >> 11) + 1.0) * 0x1.0p-53;
  };
  for (int64_t i = 0; i < n; i += 2) {
    const double r = std::sqrt(-2.0 * std::log(uniform())), a = 2.0 * M_PI * uniform();
    out[i] = mean + sigma * static_cast<float>(r * std::cos(a));
    if (i + 1 < n) out[i + 1] = mean + sigma * static_cast<float>(r * std::sin(a));
  }
}

std::vector<double> llama3_freq_factors(const SynthSpec& s) {
  const HParams& hp = s.hp;
  const double low_wavelen = s.llama3_orig_ctx / s.llama3_low;
  const double high_wavelen = s.llama3_orig_ctx / s.llama3_high;
  std::vector<double> f;
  for (int64_t i = 0; i < hp.n_rot / 2; ++i) {
    const double freq = std::pow(hp.rope_freq_base, -2.0 * i / hp.n_rot);
    const double wavelen = 2.0 * M_PI / freq;
    if (wavelen < high_wavelen) {
      f.push_back(1.0);
    } else if (wavelen > low_wavelen) {
      f.push_back(s.llama3_factor);
    } else {
      const double smooth =
          (s.llama3_orig_ctx / wavelen - s.llama3_low) / (s.llama3_high - s.llama3_low);
      f.push_back(1.0 / ((1.0 - smooth) / s.llama3_factor + smooth));
    }
  }
  return f;
}

// llama.cpp's choice of the blocks whose attn_v and ffn_down get more bits in its _M mixtures:
// the first and last eighth of the n blocks and every third block in between.
bool use_more_bits(int64_t i, int64_t n) {
  return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

// llama.cpp's Q4_K_M (LLAMA_FTYPE_MOSTLY_Q4_K_M) for a 2-D tensor: `suffix` is the name after
// "blk.<layer>." (the whole name, layer -1, outside the blocks).
TensorType q4_k_m_type(std::string_view suffix, int64_t layer, int64_t n_layer, bool tied) {
  const bool output = suffix == "output.weight" || (tied && suffix == "token_embd.weight");
  const bool more_bits =
      (suffix == "attn_v.weight" || suffix == "ffn_down.weight") && use_more_bits(layer, n_layer);
  return output || more_bits ? TensorType::Q6_K : TensorType::Q4_K;
}

// The type synth writes the 2-D tensor `name` ("blk.<layer>.<suffix>", "output.weight", …) in.
TensorType matrix_type(const SynthSpec& s, std::string_view name) {
  if (s.mixture == SynthMixture::None) return s.weight_type;
  int64_t layer = -1;
  std::string_view suffix = name;
  if (name.starts_with("blk.")) {
    const size_t dot = name.find('.', 4);
    std::from_chars(name.data() + 4, name.data() + dot, layer);
    suffix = name.substr(dot + 1);
  }
  switch (s.mixture) {
    case SynthMixture::Q4_K_M:
      return q4_k_m_type(suffix, layer, s.hp.n_layer, s.tied_output);
    case SynthMixture::None:
      break;
  }
  return s.weight_type;
}

constexpr std::string_view kSingleTypes =
    "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K";

}  // namespace

void set_synth_type(SynthSpec& s, std::string_view name) {
  std::string upper(name);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (upper == "Q4_K_M") {
    s.weight_type = TensorType::Q4_K;
    s.mixture = SynthMixture::Q4_K_M;
    return;
  }
  const std::optional<TensorType> t = type_from_name(name);
  if (!t || !can_quantize(*t))
    fail("synth: cannot write --type '{}' (known: {}, or the mixture Q4_K_M)", name, kSingleTypes);
  s.weight_type = *t;
  s.mixture = SynthMixture::None;
}

std::string synth_type_name(const SynthSpec& s) {
  switch (s.mixture) {
    case SynthMixture::Q4_K_M:
      return "Q4_K_M";
    case SynthMixture::None:
      break;
  }
  return std::string(type_name(s.weight_type));
}

TensorType synth_fitting_type(TensorType wanted, int64_t cols) {
  if (cols % traits(wanted).block_elems == 0) return wanted;
  TensorType fallback = TensorType::F16;
  if (wanted == TensorType::Q4_K || wanted == TensorType::Q3_K || wanted == TensorType::Q2_K)
    fallback = TensorType::Q5_0;
  else if (wanted == TensorType::Q5_K)
    fallback = TensorType::Q5_1;
  else if (wanted == TensorType::Q6_K)
    fallback = TensorType::Q8_0;
  return cols % traits(fallback).block_elems == 0 ? fallback : TensorType::F16;
}

namespace {

// hp.layer_kinds / kv_index from the spec's layer pattern, by the rules the loader applies to
// the keys write_keys() writes (model/hparams.cpp).
void assign_layer_kinds(SynthSpec& s) {
  HParams& hp = s.hp;
  hp.layer_kinds.assign(static_cast<size_t>(hp.n_layer), LayerKind::Attention);
  for (int64_t l = 0; l < hp.n_layer; ++l) {
    LayerKind& k = hp.layer_kinds[static_cast<size_t>(l)];
    if (hp.arch == Arch::Gemma3 && l % 6 < 5) k = LayerKind::SlidingWindow;
    if ((hp.arch == Arch::Qwen35 || hp.arch == Arch::Qwen35Moe) &&
        (l + 1) % s.full_attention_interval != 0)
      k = LayerKind::DeltaNet;
    if (hp.arch == Arch::Lfm2 &&
        std::find(s.lfm2_attention_layers.begin(), s.lfm2_attention_layers.end(), l) ==
            s.lfm2_attention_layers.end())
      k = LayerKind::ShortConv;
  }
  hp.number_kv_layers();
}

gguf::Value u32(int64_t v) {
  return gguf::Value::make_u32(static_cast<uint32_t>(v));
}

// The keys beyond the common transformer ones, as llama.cpp's converters write them.
void write_arch_keys(gguf::Writer& w, const SynthSpec& s, const std::string& p) {
  const HParams& hp = s.hp;
  if (hp.is_moe()) {
    w.set(p + "expert_count", u32(hp.n_expert));
    w.set(p + "expert_used_count", u32(hp.n_expert_used));
    w.set(p + "expert_feed_forward_length", u32(hp.n_ff_exp));
    if (hp.n_ff_shexp > 0) w.set(p + "expert_shared_feed_forward_length", u32(hp.n_ff_shexp));
    if (hp.expert_gating_sigmoid) w.set(p + "expert_gating_func", u32(2));
    if (!hp.expert_weights_norm) w.set(p + "expert_weights_norm", gguf::Value::make_bool(false));
    if (hp.expert_weights_scale != 1.0f)
      w.set(p + "expert_weights_scale", gguf::Value::make_f32(hp.expert_weights_scale));
  }
  if (hp.arch == Arch::Gemma3) {
    w.set(p + "attention.sliding_window", u32(hp.n_swa));
    w.set(p + "rope.freq_base_swa", gguf::Value::make_f32(hp.rope_freq_base_swa));
  }
  if (hp.arch == Arch::Qwen35 || hp.arch == Arch::Qwen35Moe) {
    w.set(p + "ssm.conv_kernel", u32(hp.ssm_conv_kernel));
    w.set(p + "ssm.state_size", u32(hp.ssm_head_dim));
    w.set(p + "ssm.group_count", u32(hp.ssm_n_k_heads));
    w.set(p + "ssm.time_step_rank", u32(hp.ssm_n_v_heads));
    w.set(p + "ssm.inner_size", u32(hp.ssm_inner()));
    w.set(p + "full_attention_interval", u32(s.full_attention_interval));
    // llama.cpp's loader requires the multi-section rope split (text uses one position for all
    // sections, so any split of the n_rot/2 pairs is exact); a real file's [11, 11, 10, 0] for
    // 64 rotated dims, the synthetic files' [3, 3, 2, 0] for 16.
    const int64_t pairs = hp.n_rot / 2;
    w.set(p + "rope.dimension_sections",
          gguf::Value::make_int_array(gguf::ValueType::INT32,
                                      {(pairs + 2) / 3, (pairs + 1) / 3, pairs / 3, 0}));
  }
  if (hp.arch == Arch::Lfm2) w.set(p + "shortconv.l_cache", u32(hp.shortconv_l_cache));
}

void write_keys(gguf::Writer& w, const SynthSpec& s) {
  const HParams& hp = s.hp;
  const std::string p = hp.arch_name + ".";
  w.set("general.architecture", gguf::Value::make_string(hp.arch_name));
  w.set("general.name", gguf::Value::make_string(s.name.empty() ? "synthetic" : s.name));
  w.set("general.description", gguf::Value::make_string("random weights written by hearth synth"));
  w.set(p + "context_length", u32(hp.n_ctx_train));
  w.set(p + "embedding_length", u32(hp.n_embd));
  w.set(p + "block_count", u32(hp.n_layer));
  // qwen35moe files carry no feed_forward_length (every FFN is MoE); qwen3moe's has one.
  if (hp.arch != Arch::Qwen35Moe) w.set(p + "feed_forward_length", u32(hp.n_ff));
  w.set(p + "attention.head_count", u32(hp.n_head));
  if (hp.arch == Arch::Lfm2) {
    // One KV head count per layer; 0 marks a short-conv layer.
    std::vector<int64_t> kv(static_cast<size_t>(hp.n_layer));
    for (int64_t l = 0; l < hp.n_layer; ++l)
      kv[static_cast<size_t>(l)] = hp.is_recurrent(l) ? 0 : hp.n_head_kv;
    w.set(p + "attention.head_count_kv",
          gguf::Value::make_int_array(gguf::ValueType::INT32, std::move(kv)));
  } else {
    w.set(p + "attention.head_count_kv", u32(hp.n_head_kv));
  }
  w.set(p + "attention.key_length", u32(hp.head_dim));
  w.set(p + "attention.value_length", u32(hp.head_dim));
  w.set(p + "rope.dimension_count", u32(hp.n_rot));
  w.set(p + "rope.freq_base", gguf::Value::make_f32(hp.rope_freq_base));
  w.set(p + "attention.layer_norm_rms_epsilon", gguf::Value::make_f32(hp.rms_eps));
  w.set(p + "vocab_size", u32(hp.n_vocab));
  write_arch_keys(w, s, p);
}

// Fills n uniform values in [lo, hi) from a stream seeded by `seed`.
void fill_uniform(float* out, int64_t n, uint64_t seed, double lo, double hi) {
  uint64_t state = seed;
  for (int64_t i = 0; i < n; ++i) {
    state = mix(state);
    out[i] = static_cast<float>(lo + (hi - lo) * (static_cast<double>(state >> 11) * 0x1.0p-53));
  }
}

// A 1-D tensor's values by what it is: norms ~ 1 + N(0, 0.05), biases N(0, 0.1), the DeltaNet's
// decay rates ssm_a = -exp(U(ln 0.05, ln 2)) (negative, as converters store -exp(A_log)) and
// dt bias N(0, 0.5), the shared expert's gate vector N(0, 1/sqrt(n)) like a matrix row.
void fill_vector(const std::string& name, float* v, int64_t n, uint64_t seed) {
  if (name.ends_with(".ssm_a")) {
    fill_uniform(v, n, seed, std::log(0.05), std::log(2.0));
    for (int64_t i = 0; i < n; ++i) v[i] = -std::exp(v[i]);
  } else if (name.ends_with("ssm_dt.bias")) {
    fill_normal(v, n, seed, 0.0f, 0.5f);
  } else if (name.ends_with(".bias")) {
    fill_normal(v, n, seed, 0.0f, 0.1f);
  } else if (name.ends_with("ffn_gate_inp_shexp.weight")) {
    fill_normal(v, n, seed, 0.0f, 1.0f / std::sqrt(static_cast<float>(n)));
  } else {
    fill_normal(v, n, seed, 1.0f, 0.05f);
  }
}

void add_vector(gguf::Writer& w, const TensorSpec& t, uint64_t tseed) {
  const int64_t n = t.ne[0];
  w.add_tensor(t.name, TensorType::F32, t.ne, [n, tseed, name = t.name](uint8_t* dst, size_t) {
    std::vector<float> v(static_cast<size_t>(n));
    fill_vector(name, v.data(), n, tseed);
    std::memcpy(dst, v.data(), v.size() * sizeof(float));
  });
}

void add_rope_freqs(gguf::Writer& w, const TensorSpec& t, const SynthSpec& s) {
  std::vector<double> f = llama3_freq_factors(s);
  std::vector<uint8_t> bytes(f.size() * sizeof(float));
  for (size_t i = 0; i < f.size(); ++i) {
    const float v = static_cast<float>(f[i]);
    std::memcpy(bytes.data() + i * sizeof(float), &v, sizeof(float));
  }
  w.add_tensor(t.name, TensorType::F32, t.ne, std::move(bytes));
}

// A 2-D or 3-D matrix (3-D expert tensors are ne1 * ne2 rows of ne0) of N(0, 1/sqrt(ne0))
// values, each row from its own stream (the file does not depend on the thread count).
void add_matrix(gguf::Writer& w, const TensorSpec& t, TensorType type, uint64_t tseed,
                int threads) {
  const int64_t cols = t.ne[0];
  int64_t rows = 1;
  for (size_t i = 1; i < t.ne.size(); ++i) rows *= t.ne[i];
  // Scale ~ 1/sqrt(fan_in) keeps activations and logits O(1).
  const float sigma = 1.0f / std::sqrt(static_cast<float>(cols));
  w.add_tensor(t.name, type, t.ne, [=](uint8_t* dst, size_t) {
    const size_t stride = row_bytes(type, cols);
    auto work = [&](int64_t r0, int64_t r1) {
      std::vector<float> row(static_cast<size_t>(cols));
      for (int64_t r = r0; r < r1; ++r) {
        fill_normal(row.data(), cols, mix(tseed + static_cast<uint64_t>(r)), 0.0f, sigma);
        quantize_row(type, row.data(), dst + static_cast<size_t>(r) * stride, cols);
      }
    };
    std::vector<std::thread> pool;
    const int64_t chunk = (rows + threads - 1) / threads;
    for (int i = 1; i < threads; ++i)
      pool.emplace_back(work, std::min(rows, i * chunk), std::min(rows, (i + 1) * chunk));
    work(0, std::min(rows, chunk));
    for (auto& th : pool) th.join();
  });
}

}  // namespace

uint64_t write_synthetic_model(const SynthSpec& spec, const std::string& out_path) {
  if (spec.vocab_path.empty()) fail("synth: a vocabulary GGUF is required (--vocab)");
  if (!can_quantize(spec.weight_type))
    fail("synth: cannot write weights of type {}", type_name(spec.weight_type));
  gguf::File vocab = gguf::File::open(spec.vocab_path);
  const gguf::Value* tokens = vocab.get_array("tokenizer.ggml.tokens");
  if (tokens == nullptr)
    fail("{}: has no tokenizer.ggml.tokens to take a vocabulary from", vocab.name());

  SynthSpec s = spec;
  s.hp.n_vocab = static_cast<int64_t>(tokens->array_size());
  assign_layer_kinds(s);
  s.hp.validate("synth");

  gguf::Writer w;
  write_keys(w, s);
  for (const gguf::KeyValue& kv : vocab.metadata())
    if (kv.key.rfind("tokenizer.", 0) == 0) w.set(kv.key, kv.value);

  const uint64_t seed = mix(s.seed);
  const int threads = std::max(1, s.threads);
  for (const TensorSpec& t : tensor_specs(s.hp)) {
    if (t.name == "output.weight" && s.tied_output) continue;
    if (t.name == "rope_freqs.weight") {
      if (s.rope_freqs) add_rope_freqs(w, t, s);
      continue;
    }
    const uint64_t tseed = mix(seed ^ hash_name(t.name));
    if (t.f32_matrix) {
      // Routers and conv taps stay F32 in every file, as llama-quantize leaves them.
      add_matrix(w, t, TensorType::F32, tseed, threads);
    } else if (t.matrix) {
      add_matrix(w, t, synth_fitting_type(matrix_type(s, t.name), t.ne[0]), tseed, threads);
    } else {
      add_vector(w, t, tseed);
    }
  }
  w.write(out_path);
  return std::filesystem::file_size(out_path);
}

}  // namespace hearth
