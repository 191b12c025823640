#include "tools/synth.h"

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

SynthSpec make(Arch arch, int64_t embd, int64_t layers, int64_t heads, int64_t kv_heads,
               int64_t head_dim, int64_t ff, float rope_base, float eps, int64_t ctx) {
  SynthSpec s;
  HParams& hp = s.hp;
  hp.arch = arch;
  hp.arch_name = arch_name(arch);
  hp.n_embd = embd;
  hp.n_layer = layers;
  hp.n_head = heads;
  hp.n_head_kv = kv_heads;
  hp.head_dim = head_dim;
  hp.n_rot = head_dim;
  hp.n_ff = ff;
  hp.rope_freq_base = rope_base;
  hp.rms_eps = eps;
  hp.n_ctx_train = ctx;
  hp.rope_layout = arch == Arch::Llama ? RopeLayout::Interleaved : RopeLayout::Neox;
  return s;
}

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

std::vector<std::string> synth_preset_names() {
  return {"qwen3-0.6b",   "qwen3-1.7b", "qwen2.5-0.5b", "llama-3.2-1b",
          "smollm2-135m", "tiny-llama", "tiny-qwen2",   "tiny-qwen3"};
}

std::optional<SynthSpec> synth_preset(const std::string& name) {
  SynthSpec s;
  if (name == "qwen3-0.6b") {
    s = make(Arch::Qwen3, 1024, 28, 16, 8, 128, 3072, 1e6f, 1e-6f, 40960);
  } else if (name == "qwen3-1.7b") {
    s = make(Arch::Qwen3, 2048, 28, 16, 8, 128, 6144, 1e6f, 1e-6f, 40960);
  } else if (name == "qwen2.5-0.5b") {
    s = make(Arch::Qwen2, 896, 24, 14, 2, 64, 4864, 1e6f, 1e-6f, 32768);
  } else if (name == "llama-3.2-1b") {
    s = make(Arch::Llama, 2048, 16, 32, 8, 64, 8192, 500000.0f, 1e-5f, 131072);
    s.rope_freqs = true;
    s.llama3_factor = 32.0f;
  } else if (name == "smollm2-135m") {
    s = make(Arch::Llama, 576, 30, 9, 3, 64, 1536, 100000.0f, 1e-5f, 8192);
  } else if (name == "tiny-llama") {
    s = make(Arch::Llama, 64, 2, 4, 2, 16, 128, 10000.0f, 1e-5f, 512);
    s.tied_output = false;
  } else if (name == "tiny-qwen2") {
    s = make(Arch::Qwen2, 64, 2, 4, 2, 16, 128, 1e6f, 1e-6f, 512);
  } else if (name == "tiny-qwen3") {
    s = make(Arch::Qwen3, 64, 2, 4, 2, 32, 128, 1e6f, 1e-6f, 512);
  } else {
    return std::nullopt;
  }
  s.name = name + "-synthetic";
  return s;
}

uint64_t write_synthetic_model(const SynthSpec& spec, const std::string& out_path) {
  if (spec.vocab_path.empty()) fail("synth: a vocabulary GGUF is required (--vocab)");
  if (!can_quantize(spec.weight_type))
    fail("synth: cannot write weights of type {}", type_name(spec.weight_type));
  gguf::File vocab = gguf::File::open(spec.vocab_path);
  const gguf::Value* tokens = vocab.get_array("tokenizer.ggml.tokens");
  if (tokens == nullptr)
    fail("{}: has no tokenizer.ggml.tokens to take a vocabulary from", vocab.name());

  SynthSpec s = spec;
  HParams& hp = s.hp;
  hp.n_vocab = static_cast<int64_t>(tokens->array_size());
  hp.validate("synth");

  gguf::Writer w;
  const std::string p = hp.arch_name + ".";
  w.set("general.architecture", gguf::Value::make_string(hp.arch_name));
  w.set("general.name", gguf::Value::make_string(s.name.empty() ? "synthetic" : s.name));
  w.set("general.description", gguf::Value::make_string("random weights written by hearth synth"));
  auto u32 = [](int64_t v) { return gguf::Value::make_u32(static_cast<uint32_t>(v)); };
  w.set(p + "context_length", u32(hp.n_ctx_train));
  w.set(p + "embedding_length", u32(hp.n_embd));
  w.set(p + "block_count", u32(hp.n_layer));
  w.set(p + "feed_forward_length", u32(hp.n_ff));
  w.set(p + "attention.head_count", u32(hp.n_head));
  w.set(p + "attention.head_count_kv", u32(hp.n_head_kv));
  w.set(p + "attention.key_length", u32(hp.head_dim));
  w.set(p + "attention.value_length", u32(hp.head_dim));
  w.set(p + "rope.dimension_count", u32(hp.n_rot));
  w.set(p + "rope.freq_base", gguf::Value::make_f32(hp.rope_freq_base));
  w.set(p + "attention.layer_norm_rms_epsilon", gguf::Value::make_f32(hp.rms_eps));
  w.set(p + "vocab_size", u32(hp.n_vocab));
  for (const gguf::KeyValue& kv : vocab.metadata())
    if (kv.key.rfind("tokenizer.", 0) == 0) w.set(kv.key, kv.value);

  const uint64_t seed = mix(s.seed);
  for (const TensorSpec& t : tensor_specs(hp)) {
    if (t.name == "output.weight" && s.tied_output) continue;
    if (t.name == "rope_freqs.weight") {
      if (!s.rope_freqs) continue;
      std::vector<double> f = llama3_freq_factors(s);
      std::vector<uint8_t> bytes(f.size() * sizeof(float));
      for (size_t i = 0; i < f.size(); ++i) {
        const float v = static_cast<float>(f[i]);
        std::memcpy(bytes.data() + i * sizeof(float), &v, sizeof(float));
      }
      w.add_tensor(t.name, TensorType::F32, t.ne, std::move(bytes));
      continue;
    }
    const uint64_t tseed = mix(seed ^ hash_name(t.name));
    if (!t.matrix) {
      const bool bias = t.name.find(".bias") != std::string::npos;
      const int64_t n = t.ne[0];
      w.add_tensor(t.name, TensorType::F32, t.ne, [n, tseed, bias](uint8_t* dst, size_t) {
        std::vector<float> v(static_cast<size_t>(n));
        fill_normal(v.data(), n, tseed, bias ? 0.0f : 1.0f, bias ? 0.1f : 0.05f);
        std::memcpy(dst, v.data(), v.size() * sizeof(float));
      });
      continue;
    }
    const int64_t cols = t.ne[0], rows = t.ne[1];
    const TensorType type = matrix_type(s, t.name);
    const int64_t block = traits(type).block_elems;
    if (cols % block != 0)
      fail("synth: tensor '{}' rows of {} are not a multiple of the {} block size {}", t.name, cols,
           type_name(type), block);
    // Scale ~ 1/sqrt(fan_in) keeps activations and logits O(1).
    const float sigma = 1.0f / std::sqrt(static_cast<float>(cols));
    const int threads = std::max(1, s.threads);
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
  w.write(out_path);
  return std::filesystem::file_size(out_path);
}

}  // namespace hearth
