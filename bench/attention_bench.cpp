// Attention kernel figures: decode over a long cached prefix (KV read bandwidth, against the
// machine's measured read bandwidth) and prefill chunks with and without a cached prefix
// (achieved GFLOP/s and the cost of the prefix). Every layer has its own KV, as in a model, so
// decode streams from memory rather than from cache.
//
//   attention_bench [-t threads] [--layers N] [--ctx 4096] [--shape qwen3|llama1b] [--type f16]
//                   [--token-major] [--block-tokens 32 (0: one block per layer)] [-r reps]
//                   [--quick (no pool/bandwidth probes)]
//                   [--only decode|prefill]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ops/attention.h"
#include "ops/cpu_features.h"
#include "ops/thread_pool.h"
#include "quant/types.h"
#include "tools/membw.h"
#include "util/anonymous_memory.h"

using namespace hearth;
using namespace hearth::ops;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct Shape {
  const char* name;
  int64_t n_head, n_kv_head, head_dim, n_layer;
};

// Every layer's KV as the engine's pool holds it (model/kv_arena.h): blocks of block_tokens
// tokens (0: one block of all of them), each holding every layer's K then V block back to back,
// in one huge-page mapping - so a layer's blocks sit a whole layer stack apart and the TLB and
// prefetchers see what they see in a model.
struct KvStack {
  AnonymousMemory memory;
  std::vector<std::vector<const uint8_t*>> k, v;  // [layer][block]
  std::vector<KvSeqView> views;                   // [layer]
};

KvStack make_kv(const Shape& s, TensorType type, int64_t n_layers, int64_t n_tokens,
                bool head_major, int64_t block_tokens) {
  KvLayout lay;
  lay.type = type;
  lay.n_kv_head = s.n_kv_head;
  lay.head_dim = s.head_dim;
  lay.block_tokens = block_tokens > 0 ? block_tokens : n_tokens;
  lay.head_major = head_major;
  const int64_t n_blocks = (n_tokens + lay.block_tokens - 1) / lay.block_tokens;
  const size_t bb = lay.block_bytes(), layer_stride = 2 * bb;
  const size_t block_stride = layer_stride * static_cast<size_t>(n_layers);
  KvStack st;
  st.memory = AnonymousMemory::accounted(block_stride * static_cast<size_t>(n_blocks), "kv");
  auto block = [&](int64_t b, int64_t l) {  // layer l's K block of block b; its V block follows
    return st.memory.data() + static_cast<size_t>(b) * block_stride +
           static_cast<size_t>(l) * layer_stride;
  };
  std::mt19937 rng(1);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> row(static_cast<size_t>(s.n_kv_head * s.head_dim));
  st.k.assign(static_cast<size_t>(n_layers), {});
  st.v.assign(static_cast<size_t>(n_layers), {});
  for (int64_t l = 0; l < n_layers; ++l) {
    for (int64_t t = 0; t < n_tokens; ++t) {
      uint8_t* kb = block(t / lay.block_tokens, l);
      for (auto& x : row) x = d(rng);
      kv_store_token(lay, row.data(), kb, t % lay.block_tokens);
      for (auto& x : row) x = d(rng);
      kv_store_token(lay, row.data(), kb + bb, t % lay.block_tokens);
    }
    auto& k = st.k[static_cast<size_t>(l)];
    auto& v = st.v[static_cast<size_t>(l)];
    for (int64_t b = 0; b < n_blocks; ++b) {
      k.push_back(block(b, l));
      v.push_back(block(b, l) + bb);
    }
    st.views.push_back({lay, k.data(), v.data(), n_tokens});
  }
  return st;
}

// Thread-pool fork-join round trip with 2 threads: a region of 2 tasks that each wait for the
// other to start (so both threads must take part), back to back (workers spinning), after an
// idle gap longer than the spin window (workers asleep), and back to back with spinning off.
void pool_latency() {
  ThreadPool pool(2);
  std::atomic<int> started{0};
  int64_t target = 0;
  const auto both = [&](int64_t, int) {
    started.fetch_add(1, std::memory_order_acq_rel);
    while (started.load(std::memory_order_acquire) < target) {
    }
  };
  auto region = [&] {
    target += 2;
    pool.parallel_for(2, both);
  };
  auto back_to_back = [&](int n) {
    for (int i = 0; i < 200; ++i) region();
    double best = 1e30;
    for (int rep = 0; rep < 5; ++rep) {
      const auto t0 = Clock::now();
      for (int i = 0; i < n; ++i) region();
      best = std::min(best, seconds_since(t0) / n);
    }
    return best * 1e6;
  };
  const double spin = back_to_back(20000);
  std::vector<double> woken;
  for (int i = 0; i < 40; ++i) {
    std::this_thread::sleep_for(std::chrono::microseconds(pool.spin_us() + 3000));
    const auto t0 = Clock::now();
    region();
    woken.push_back(seconds_since(t0) * 1e6);
  }
  std::sort(woken.begin(), woken.end());
  pool.set_spin_us(0);
  const double nospin = back_to_back(2000);
  const auto noop = [](int64_t, int) {};
  pool.set_spin_us(ThreadPool::kDefaultSpinUs);
  for (int i = 0; i < 1000; ++i) pool.parallel_for(2, noop);
  auto t0 = Clock::now();
  for (int i = 0; i < 100000; ++i) pool.parallel_for(2, noop);
  const double empty = seconds_since(t0) / 100000 * 1e6;
  std::printf(
      "thread pool (2 threads, spin window %d us): fork-join %.2f us back-to-back "
      "(spinning), %.1f us median from sleep, %.1f us back-to-back with spinning off; "
      "empty region %.3f us\n",
      ThreadPool::kDefaultSpinUs, spin, woken[woken.size() / 2], nospin, empty);
}

// Multiply-adds of attention for n_q queries at positions pos0.. (QK and PV, 2 flops each).
double attention_flops(const Shape& s, int64_t n_q, int64_t pos0) {
  double positions = 0;
  for (int64_t t = 0; t < n_q; ++t) positions += static_cast<double>(pos0 + t + 1);
  return positions * static_cast<double>(s.n_head * s.head_dim) * 4.0;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, reps = 15;
  bool head_major = true, quick = false;  // head-major: as the engine lays out its KV
  int64_t block_tokens = 32;              // the engine's default (--kv-block-tokens)
  std::string only;
  int64_t ctx = 4096, layers = 28;
  std::string shape_name = "qwen3", type_name_arg = "all";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "-t")
      threads = std::atoi(next().c_str());
    else if (a == "--ctx")
      ctx = std::atoll(next().c_str());
    else if (a == "--layers")
      layers = std::atoll(next().c_str());
    else if (a == "--shape")
      shape_name = next();
    else if (a == "--type")
      type_name_arg = next();
    else if (a == "--block-tokens")
      block_tokens = std::atoll(next().c_str());
    else if (a == "--token-major")
      head_major = false;
    else if (a == "-r")
      reps = std::atoi(next().c_str());
    else if (a == "--quick")
      quick = true;
    else if (a == "--only")
      only = next();
    else {
      std::fprintf(
          stderr,
          "usage: %s [-t N] [-r reps] [--ctx N] [--layers N] [--shape qwen3|llama1b] "
          "[--type f32|f16|q8_0|q4_0|all] [--token-major] [--block-tokens N (0: one block)] "
          "[--quick] [--only "
          "decode|prefill]\n",
          argv[0]);
      return 2;
    }
  }
  const Shape shape = shape_name == "llama1b" ? Shape{"Llama-3.2-1B", 32, 8, 64, 16}
                                              : Shape{"Qwen3-0.6B", 16, 8, 128, 28};
  layers = std::min(layers, shape.n_layer);
  ThreadPool pool(threads);
  std::printf(
      "attention_bench: %s shape (%lld heads, %lld KV heads, head_dim %lld), %lld layers, "
      "%d threads, simd %s\n",
      shape.name, static_cast<long long>(shape.n_head), static_cast<long long>(shape.n_kv_head),
      static_cast<long long>(shape.head_dim), static_cast<long long>(layers), threads,
      simd_level_name(simd_level()));
  double bw = 0;
  if (!quick) {
    if (threads >= 2) pool_latency();
    bw = tools::measure_read_bandwidth(pool) / 1e9;
    std::printf("measured read bandwidth (%d threads): %.1f GB/s\n\n", threads, bw);
  }

  std::vector<TensorType> types;
  if (type_name_arg == "all") {
    types = {TensorType::F16, TensorType::Q8_0, TensorType::Q4_0, TensorType::F32};
  } else {
    auto t = type_from_name(type_name_arg);
    if (!t) {
      std::fprintf(stderr, "unknown type %s\n", type_name_arg.c_str());
      return 2;
    }
    types = {*t};
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(shape.head_dim));
  std::mt19937 rng(2);
  std::normal_distribution<float> d(0.0f, 1.0f);

  for (TensorType type : types) {
    // Decode: one query at position ctx over ctx+1 cached tokens, every layer in turn.
    if (only.empty() || only == "decode") {
      auto kv = make_kv(shape, type, layers, ctx + 1, head_major, block_tokens);
      std::vector<float> q(static_cast<size_t>(shape.n_head * shape.head_dim));
      for (auto& x : q) x = d(rng);
      std::vector<float> out(q.size());
      AttentionArgs a;
      a.q = q.data();
      a.n_q = 1;
      a.n_head = shape.n_head;
      a.pos0 = ctx;
      a.scale = scale;
      a.out = out.data();
      const double bytes_per_layer = 2.0 * static_cast<double>(ctx + 1) *
                                     static_cast<double>(kv.views[0].layout.token_bytes());
      double best = 1e30;
      for (int rep = 0; rep < reps; ++rep) {
        const auto t0 = Clock::now();
        for (const KvSeqView& view : kv.views) attention(a, view, pool);
        best = std::min(best, seconds_since(t0));
      }
      const double per_layer = best / static_cast<double>(layers);
      const double gbs = bytes_per_layer / per_layer / 1e9;
      const std::string of_bw =
          bw > 0 ? " (" + std::to_string(static_cast<int>(100.0 * gbs / bw + 0.5)) + "% of read bw)"
                 : "";
      std::printf(
          "%-5s decode  ctx %5lld: %7.1f us/layer, KV %6.2f MB/layer, %5.1f GB/s%s, %.2f "
          "ms/token for %lld layers\n",
          std::string(type_name(type)).c_str(), static_cast<long long>(ctx), per_layer * 1e6,
          bytes_per_layer / 1e6, gbs, of_bw.c_str(), best * 1e3, static_cast<long long>(layers));
    }
    // Prefill: 90 new tokens from empty and after 1100 cached ones.
    if (only.empty() || only == "prefill") {
      const int64_t n_new = 90, prefix = 1100;
      const int64_t pl = std::min<int64_t>(layers, 4);
      auto kv = make_kv(shape, type, pl, prefix + n_new, head_major, block_tokens);
      std::vector<float> q(static_cast<size_t>(n_new * shape.n_head * shape.head_dim));
      for (auto& x : q) x = d(rng);
      std::vector<float> out(q.size());
      double times[2];
      for (int k = 0; k < 2; ++k) {
        const int64_t pos0 = k == 0 ? 0 : prefix;
        AttentionArgs a;
        a.q = q.data();
        a.n_q = n_new;
        a.n_head = shape.n_head;
        a.pos0 = pos0;
        a.scale = scale;
        a.out = out.data();
        double best = 1e30;
        for (int rep = 0; rep < reps; ++rep) {
          const auto t0 = Clock::now();
          for (const KvSeqView& view : kv.views) attention(a, view, pool);
          best = std::min(best, seconds_since(t0));
        }
        times[k] = best / static_cast<double>(pl);
        const double fl = attention_flops(shape, n_new, pos0);
        std::printf(
            "%-5s prefill %lld tok after %4lld: %8.3f ms/layer, %6.1f GFLOP/s, "
            "%.1f ms for %lld layers\n",
            std::string(type_name(type)).c_str(), static_cast<long long>(n_new),
            static_cast<long long>(pos0), times[k] * 1e3, fl / times[k] / 1e9,
            times[k] * 1e3 * static_cast<double>(shape.n_layer),
            static_cast<long long>(shape.n_layer));
      }
      const double flop_ratio =
          attention_flops(shape, n_new, prefix) / attention_flops(shape, n_new, 0);
      std::printf(
          "%-5s prefill cost ratio (after %lld / from empty): time %.1fx, arithmetic "
          "%.1fx\n\n",
          std::string(type_name(type)).c_str(), static_cast<long long>(prefix), times[1] / times[0],
          flop_ratio);
    }
  }
  return 0;
}
