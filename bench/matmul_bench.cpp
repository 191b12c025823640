// matmul kernel figures: decode (n_tok = 1) weight bandwidth against the machine's measured
// read bandwidth, prefill (n_tok = 512) and small-batch GOPS (4 tokens, or --batch N), as
// 2·rows·cols·tokens / s with activation quantization included, per weight type, for 1 and 2
// threads (or -t N).
//
// Decode and the small batch rotate over enough copies of the matrix to exceed the
// last-level cache, as a forward pass streams every layer's weights once per step.
//
//   matmul_bench [-t 1,2] [--types q8_0,q4_0,...] [--quick] [--no-prefill] [--no-lm-head]
//                [--in-cache] [--batch N]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "ops/cpu_features.h"
#include "ops/matmul.h"
#include "ops/packed_rows.h"
#include "ops/thread_pool.h"
#include "quant/blocks.h"
#include "quant/half.h"
#include "quant/types.h"
#include "tools/membw.h"

using namespace hearth;
using namespace hearth::ops;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Random but well-formed weights: finite small floats, block scales of a sane magnitude (the
// kernels' speed does not depend on the values).
std::vector<uint8_t> make_weights(TensorType t, int64_t rows, int64_t cols, uint32_t seed) {
  const size_t bytes = row_bytes(t, cols) * static_cast<size_t>(rows);
  std::vector<uint8_t> w(bytes);
  uint64_t s = 0x9E3779B97F4A7C15ull * (seed + 1);
  auto next = [&] {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  };
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    const uint64_t v = next();
    std::memcpy(w.data() + i, &v, 8);
  }
  for (; i < bytes; ++i) w[i] = static_cast<uint8_t>(next());
  auto patch16 = [&](size_t stride, size_t off, uint16_t and_mask, uint16_t or_mask) {
    for (size_t p = off; p + 2 <= bytes; p += stride) {
      uint16_t h;
      std::memcpy(&h, w.data() + p, 2);
      h = static_cast<uint16_t>((h & and_mask) | or_mask);
      std::memcpy(w.data() + p, &h, 2);
    }
  };
  const size_t bb = traits(t).block_bytes;
  switch (t) {
    case TensorType::F32:
      for (size_t p = 0; p + 4 <= bytes; p += 4) {
        uint32_t u;
        std::memcpy(&u, w.data() + p, 4);
        u = (u & 0x807FFFFFu) | 0x3C000000u;
        std::memcpy(w.data() + p, &u, 4);
      }
      break;
    case TensorType::F16:
      patch16(2, 0, 0x83FF, 0x2C00);
      break;
    case TensorType::BF16:
      patch16(2, 0, 0x807F, 0x3C00);
      break;
    case TensorType::Q6_K:
      patch16(bb, offsetof(BlockQ6_K, d), 0x03FF, 0x1C00);
      break;
    default:
      patch16(bb, 0, 0x03FF, 0x1C00);
      if (t == TensorType::Q4_1 || t == TensorType::Q5_1 || t == TensorType::Q4_K ||
          t == TensorType::Q5_K)
        patch16(bb, 2, 0x03FF, 0x1C00);
      break;
  }
  return w;
}

// Weights in the file's layout, and the packed copy the model loader makes (Q8_0, Q4_0) when asked.
struct BenchWeights {
  TensorType type;
  int64_t rows, cols;
  std::vector<uint8_t> bytes, packed;
};

BenchWeights bench_weights(TensorType t, int64_t rows, int64_t cols, uint32_t seed, bool pack) {
  BenchWeights w{t, rows, cols, make_weights(t, rows, cols, seed), {}};
  if (pack) {
    w.packed.resize(packed_bytes(t, rows, cols));
    MatrixView m;
    m.type = t;
    m.data = w.bytes.data();
    m.n_rows = rows;
    m.n_cols = cols;
    m.row_stride = row_bytes(t, cols);
    pack_rows(m, w.packed.data());
  }
  return w;
}

MatrixView view_of(const BenchWeights& w) {
  MatrixView m;
  m.name = "bench";
  m.type = w.type;
  m.data = w.bytes.data();
  m.n_rows = w.rows;
  m.n_cols = w.cols;
  m.row_stride = row_bytes(w.type, w.cols);
  m.packed = w.packed.empty() ? nullptr : w.packed.data();
  return m;
}

std::vector<float> random_x(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (auto& v : x) v = d(rng);
  return x;
}

// The machine may be shared: every figure is the best of many timed repetitions (the least
// disturbed one), with the median beside it.
struct Result {
  double best = 0, median = 0;  // GB/s or GOPS
  double best_us = 0;           // time per call of the best repetition
};

Result summarize(std::vector<double>& rates, std::vector<double>& us) {
  std::sort(rates.begin(), rates.end());
  std::sort(us.begin(), us.end());
  return {rates.back(), rates[rates.size() / 2], us.front()};
}

// n_tok tokens (1: decode, 4: a step of four streams) over `copies` distinct matrices in turn,
// one repetition = one pass over all. Rates in GB/s of weights; ops_rate adds the GOPS.
Result bench_decode(TensorType t, bool pack, int64_t rows, int64_t cols, ThreadPool& pool,
                    size_t min_bytes, double min_s, int64_t n_tok = 1, double* gops = nullptr) {
  const size_t mat_bytes = row_bytes(t, cols) * static_cast<size_t>(rows);
  const size_t copies = std::max<size_t>(1, (min_bytes + mat_bytes - 1) / mat_bytes);
  std::vector<BenchWeights> ws;
  ws.push_back(bench_weights(t, rows, cols, 1, pack));
  for (size_t c = 1; c < copies; ++c) ws.push_back(ws[0]);
  const auto x = random_x(cols * n_tok, 2);
  std::vector<float> y(static_cast<size_t>(rows * n_tok));
  for (auto& w : ws) matmul(view_of(w), x.data(), n_tok, y.data(), pool);  // warm
  std::vector<double> rates, us;
  const auto start = Clock::now();
  do {
    const auto t0 = Clock::now();
    for (auto& w : ws) matmul(view_of(w), x.data(), n_tok, y.data(), pool);
    const double el = seconds_since(t0);
    rates.push_back(static_cast<double>(mat_bytes * copies) / el / 1e9);
    us.push_back(el / static_cast<double>(copies) * 1e6);
  } while (seconds_since(start) < min_s || rates.size() < 5);
  const Result r = summarize(rates, us);
  if (gops)
    *gops = r.best * 1e9 / static_cast<double>(mat_bytes) * 2.0 * static_cast<double>(rows) *
            static_cast<double>(cols) * static_cast<double>(n_tok) / 1e9;
  return r;
}

Result bench_prefill(TensorType t, bool pack, int64_t rows, int64_t cols, int64_t n_tok,
                     ThreadPool& pool, double min_s) {
  const BenchWeights w = bench_weights(t, rows, cols, 3, pack);
  const MatrixView m = view_of(w);
  const auto x = random_x(n_tok * cols, 4);
  std::vector<float> y(static_cast<size_t>(rows * n_tok));
  matmul(m, x.data(), n_tok, y.data(), pool);
  const double ops =
      2.0 * static_cast<double>(rows) * static_cast<double>(cols) * static_cast<double>(n_tok);
  std::vector<double> rates, us;
  const auto start = Clock::now();
  do {
    const auto t0 = Clock::now();
    matmul(m, x.data(), n_tok, y.data(), pool);
    const double el = seconds_since(t0);
    rates.push_back(ops / el / 1e9);
    us.push_back(el * 1e6);
  } while (seconds_since(start) < min_s || rates.size() < 5);
  return summarize(rates, us);
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t p = 0;
  while (p <= s.size()) {
    const size_t q = s.find(',', p);
    out.push_back(s.substr(p, q == std::string::npos ? std::string::npos : q - p));
    if (q == std::string::npos) break;
    p = q + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> threads = {1, 2};
  std::vector<TensorType> types = {TensorType::Q8_0, TensorType::Q4_0, TensorType::Q4_K,
                                   TensorType::Q6_K, TensorType::F16,  TensorType::BF16,
                                   TensorType::F32,  TensorType::Q4_1, TensorType::Q5_0,
                                   TensorType::Q5_1, TensorType::Q5_K};
  bool quick = false, prefill = true, lm_head = true, in_cache = false;
  int64_t batch = 4;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "-t" || a == "--threads") && i + 1 < argc) {
      threads.clear();
      for (const auto& s : split(argv[++i])) threads.push_back(std::atoi(s.c_str()));
    } else if (a == "--types" && i + 1 < argc) {
      types.clear();
      for (const auto& s : split(argv[++i])) {
        const auto t = type_from_name(s);
        if (!t || !matmul_supported(*t)) {
          std::fprintf(stderr, "unknown or unsupported type %s\n", s.c_str());
          return 2;
        }
        types.push_back(*t);
      }
    } else if (a == "--quick") {
      quick = true;
    } else if (a == "--no-prefill") {
      prefill = false;
    } else if (a == "--no-lm-head") {
      lm_head = false;
    } else if (a == "--batch" && i + 1 < argc) {
      batch = std::atoll(argv[++i]);
      if (batch < 1 || batch > 64) {
        std::fprintf(stderr, "--batch takes 1 to 64 tokens\n");
        return 2;
      }
    } else if (a == "--in-cache") {
      in_cache = true;
    } else {
      std::fprintf(stderr,
                   "usage: matmul_bench [-t 1,2] [--types q8_0,q4_0,...] [--quick] "
                   "[--no-prefill] [--no-lm-head] [--in-cache] [--batch N]\n");
      return 2;
    }
  }
  const double min_s = quick ? 0.3 : 1.0;
  char batch_column[48];
  std::snprintf(batch_column, sizeof batch_column, "b%lld 1024x3072 %s",
                static_cast<long long>(batch), in_cache ? "in cache" : "from memory");
  // Well past the 32 MiB L3; --in-cache reads one matrix over and over (from L2/L3: the
  // kernel's own speed for a decode shape, without the memory's; the 1024x151936 head is larger
  // than the L3 either way).
  const size_t rotate_bytes = in_cache ? 0 : size_t{256} << 20;
  std::printf("simd: %s (%s)\n", simd_level_name(simd_level()), cpu_features().summary().c_str());

  for (int nt : threads) {
    ThreadPool pool(nt);
    const double bw = tools::measure_read_bandwidth(pool) / 1e9;
    std::printf(
        "\n== %d thread%s: measured read bandwidth %.1f GB/s (best of 5 passes over 1 GiB) ==\n",
        nt, nt > 1 ? "s" : "", bw);
    std::printf(
        "decode (n_tok=1, GB/s of weights, best/median, %% of read bw); prefill (n_tok=512, "
        "GOPS = 2*rows*cols*tok/s, best/median)\n");
    std::printf("shapes as cols x rows (input width x outputs)\n");
    std::printf("%-5s | %-23s | %-23s | %-23s | %-15s | %-15s | %-23s\n", "type", "dec 1024x3072",
                "dec 3072x1024", "dec 1024x151936", "pp512 1024x3072", "pp512 3072x1024",
                batch_column);
    for (TensorType t : types)
      for (bool pack : packable(t) ? std::vector<bool>{false, true} : std::vector<bool>{false}) {
        const bool simd = matmul_has_simd_kernel(t);
        std::printf("%-5s |", (std::string(type_name(t)) + (pack ? "p" : "")).c_str());
        std::fflush(stdout);
        auto dec = [&](int64_t rows, int64_t cols, size_t rot) {
          const Result r = bench_decode(t, pack, rows, cols, pool, rot, min_s);
          std::printf(" %5.1f/%5.1f %4.0f%%      |", r.best, r.median, 100 * r.best / bw);
          std::fflush(stdout);
        };
        dec(3072, 1024, rotate_bytes);  // FFN up/gate shape
        dec(1024, 3072, rotate_bytes);  // FFN down shape
        if (lm_head)
          dec(151936, 1024, 0);  // output (lm head) shape
        else
          std::printf(" %23s |", "-");
        if (prefill) {
          for (auto [rows, cols] : {std::pair<int64_t, int64_t>{3072, 1024}, {1024, 3072}}) {
            const Result r = bench_prefill(t, pack, rows, cols, 512, pool, min_s);
            std::printf(" %6.1f/%6.1f  |", r.best, r.median);
            std::fflush(stdout);
          }
          // `batch` tokens at once, the weights streamed from memory: a decode step of that many
          // concurrent streams.
          double gops = 0;
          const Result r =
              bench_decode(t, pack, 3072, 1024, pool, rotate_bytes, min_s, batch, &gops);
          std::printf(" %6.1f GOPS %4.1f GB/s |", gops, r.best);
        }
        std::printf("%s\n", simd ? "" : "  (scalar path)");
      }
  }
  return 0;
}
