// `hearth bench`: prompt processing (ppN) and generation (tgN) speed in the table people know
// from llama-bench, plus generation's achieved weight bandwidth against the machine's measured
// read bandwidth, and prefill's achieved arithmetic rate.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "cli/commands.h"
#include "cli/runtime.h"
#include "engine/engine.h"
#include "kv/kv_manager.h"
#include "model/forward.h"
#include "ops/attention.h"
#include "ops/cpu_features.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/region_profile.h"
#include "tools/compute_peak.h"
#include "tools/membw.h"
#include "util/error.h"

namespace hearth::cli {
namespace {

struct BenchOptions {
  std::string model;
  std::vector<int64_t> n_prompt{512};
  std::vector<int64_t> n_gen{128};
  std::vector<int64_t> depth{0};
  int threads = 2;
  int reps = 3;
  std::string kv_type = "f16";
  std::vector<int64_t> kv_block{EngineOptions{}.kv_block_tokens};  // tokens per KV block
  bool membw = true;
  bool membw_only = false;
  bool breakdown = false;  // tgN: split the time into matmul regions, attention and the rest
  std::vector<int64_t> concurrency;  // engine: aggregate generation with N streams
  int64_t long_prompt = 0;
  int64_t step_tokens =
      EngineOptions{}.step_tokens;  // engine: TTFT of a short request during a long prefill
};

struct Stats {
  double mean = 0, sd = 0;
};

Stats stats(const std::vector<double>& v) {
  Stats s;
  for (double x : v) s.mean += x;
  s.mean /= static_cast<double>(v.size());
  for (double x : v) s.sd += (x - s.mean) * (x - s.mean);
  s.sd = v.size() > 1 ? std::sqrt(s.sd / static_cast<double>(v.size() - 1)) : 0.0;
  return s;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Every layer matrix a token passes through, with the share of tokens that read it: 1, or for a
// routed expert n_expert_used / n_expert (a decode step reads only the chosen experts).
template <typename Fn>
void for_each_active_matrix(const Model& m, Fn fn) {
  const HParams& hp = m.hparams();
  const double share =
      hp.is_moe() ? static_cast<double>(hp.n_expert_used) / static_cast<double>(hp.n_expert) : 1;
  for (const auto& L : m.weights().layers) {
    for (const MatrixView* w :
         {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down, &L.router, &L.gate_shexp,
          &L.up_shexp, &L.down_shexp, &L.ssm_qkv, &L.ssm_gate, &L.ssm_beta, &L.ssm_alpha,
          &L.ssm_out, &L.conv_in, &L.conv_out})
      if (w->data != nullptr) fn(*w, 1.0);
    for (const auto* experts : {&L.gate_exps, &L.up_exps, &L.down_exps})
      for (const MatrixView& w : *experts) fn(w, share);
  }
}

// Multiply-adds per token in the weight matrices (the output matrix once per logits row).
double matmul_ops_per_token(const Model& m, bool with_output) {
  double n = 0;
  for_each_active_matrix(m, [&](const MatrixView& w, double share) {
    n += share * 2.0 * static_cast<double>(w.n_cols) * static_cast<double>(w.n_rows);
  });
  if (with_output)
    n += 2.0 * static_cast<double>(m.weights().output.n_cols) *
         static_cast<double>(m.weights().output.n_rows);
  return n;
}

// Which kernel the matmuls of each weight type and the attention run at this level (issue: a
// figure is only comparable with the kernels that made it).
void print_kernels(const Model& model, TensorType kv) {
  std::map<std::pair<std::string, std::string>, int> count;  // (type, kernel) -> matrices
  auto add = [&](const MatrixView& m) {
    if (m.data != nullptr)
      ++count[std::make_pair(std::string(type_name(m.type)),
                             std::string(ops::matmul_kernel_name(m)))];
  };
  for (const LayerWeights& L : model.weights().layers)
    for (const MatrixView* m : L.matrices()) add(*m);
  add(model.weights().output);
  std::string matmuls;
  for (const auto& [key, n] : count)
    matmuls += fmt::format("{}{} {} (x{})", matmuls.empty() ? "" : ", ", key.first, key.second, n);
  fmt::print("kernels: matmul {} | attention {} ({} KV)\n", matmuls, ops::attention_kernel_name(),
             type_name(kv));
}

// Bytes of weights one decode step reads (on average over tokens for routed experts).
double weight_bytes_per_token(const Model& m) {
  double n = 0;
  auto add = [&](const MatrixView& w, double share) {
    n += share * static_cast<double>(w.bytes());
  };
  for_each_active_matrix(m, add);
  add(m.weights().output, 1.0);
  return n;
}

// The type of the FFN's weights, which hold most of a prefill's arithmetic: the dense gate, or
// for an MoE model the routed experts' (the first layer's; a mixture's other types differ little).
TensorType ffn_weight_type(const Model& m) {
  const LayerWeights& L = m.weights().layers.front();
  if (L.w_gate.data == nullptr && !L.gate_exps.empty()) return L.gate_exps.front().type;
  return L.w_gate.type;
}

// Attention multiply-adds for n new tokens after `depth` cached ones.
double attention_ops(const HParams& hp, int64_t depth, int64_t n) {
  double keys = 0;
  for (int64_t t = 0; t < n; ++t) keys += static_cast<double>(depth + t + 1);
  return 4.0 * keys * static_cast<double>(hp.n_head * hp.head_dim * hp.n_kv_layers());
}

std::vector<int32_t> random_tokens(int64_t n, int64_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> d(0, static_cast<int32_t>(vocab - 1));
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (auto& x : v) x = d(rng);
  return v;
}

void bench_engine(const BenchOptions& o, const Model& model, const Tokenizer& tok,
                  ops::ThreadPool& pool, TensorType kv);

// Brings a context back to `prefix` (the test's depth) for the next repetition. One context
// serves every repetition, as a server's pool is reused, so the KV pages are first touched in
// the warm-up run and not in a measured one; a recurrent state cannot roll back, so such a
// model starts over and prefills the prefix again.
void rewind_to_depth(Forward& f, const std::vector<int32_t>& prefix) {
  const auto depth = static_cast<int64_t>(prefix.size());
  if (f.model().hparams().has_recurrent_layers() && f.n_past() != depth) {
    f.truncate(0);
    if (depth > 0) f.eval(prefix);
    return;
  }
  if (f.n_past() < depth) f.eval(prefix);  // the first time
  f.truncate(depth);
}

// --breakdown: where the timed tgN runs' time went, from their parallel regions
// (ops/region_profile.h): the matmuls (and the weight bandwidth they reach inside their regions,
// against the probe), attention, and the rest - per-token steps on one thread and hand-offs.
std::string decode_breakdown(const std::string& test, double seconds, int64_t tokens,
                             double probe_bw) {
  double mm_s = 0, mm_bytes = 0, att_s = 0;
  int64_t att_calls = 0;
  std::string sizes;
  const auto per_token = [&](double x) { return x / static_cast<double>(tokens); };
  for (const ops::RegionStat& r : ops::region_profile()) {
    if (r.kind == ops::RegionKind::Attention) {
      att_s += r.seconds;
      att_calls += r.calls;
      continue;
    }
    const double bytes = static_cast<double>(r.bytes) * static_cast<double>(r.calls);
    mm_s += r.seconds;
    mm_bytes += bytes;
    sizes += fmt::format("\n  matmul {:>9.3f} MB x{:<4.0f} {:>9.1f} us {:>7.1f} GB/s",
                         r.bytes / 1e6, per_token(static_cast<double>(r.calls)),
                         r.seconds / static_cast<double>(r.calls) * 1e6, bytes / r.seconds / 1e9);
  }
  const double rest = std::max(0.0, seconds - mm_s - att_s);
  auto part = [&](double s) {
    return fmt::format("{:.3f} ms ({:.1f}%)", per_token(s) * 1e3, 100 * s / seconds);
  };
  const double mm_bw = mm_s > 0 ? mm_bytes / mm_s : 0;
  return fmt::format(
      "{} per token: {:.3f} ms = matmul regions {} at {:.1f} GB/s{} + attention {} in {:.0f} "
      "regions + the rest {}{}",
      test, per_token(seconds) * 1e3, part(mm_s), mm_bw / 1e9,
      probe_bw > 0 ? fmt::format(" ({:.0f}% of {:.1f})", 100 * mm_bw / probe_bw, probe_bw / 1e9)
                   : "",
      part(att_s), per_token(static_cast<double>(att_calls)), part(rest), sizes);
}

// tgN: greedy generation of `ng` tokens after `prefix`, o.reps timed runs after a warm-up. With
// a probe, the read bandwidth is measured again just before each timed run and the run's weight
// bandwidth is taken against that reading (the mean of the per-run ratios), so that a drifting
// host does not set one spell's decode against another spell's bandwidth.
void time_generation(const BenchOptions& o, const Model& model, const ForwardOptions& fo,
                     const std::vector<int32_t>& prefix, int64_t ng, int64_t blk,
                     ops::ThreadPool& pool, tools::ReadBandwidthProbe* probe,
                     std::vector<std::string>& breakdowns) {
  using Clock = std::chrono::steady_clock;
  const double wbytes = weight_bytes_per_token(model);
  std::vector<double> rates, fractions, probes;
  double timed_s = 0;
  ops::reset_region_profile();
  Forward f(model, fo, pool);
  for (int r = 0; r < o.reps + 1; ++r) {  // first run warms up
    rewind_to_depth(f, prefix);
    const double bw = r > 0 && probe != nullptr ? probe->measure(2) : 0.0;
    int32_t tok = 1;
    ops::set_region_profiling(o.breakdown && r > 0);
    const auto t0 = Clock::now();
    for (int64_t i = 0; i < ng; ++i) {
      const int32_t one[1] = {tok};
      std::vector<float> logits = f.eval(one);
      tok = static_cast<int32_t>(
          ops::first_max_index(logits.data(), static_cast<int64_t>(logits.size())));
    }
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    ops::set_region_profiling(false);
    if (r == 0) continue;
    timed_s += s;
    rates.push_back(static_cast<double>(ng) / s);
    if (bw > 0) {
      fractions.push_back(wbytes * rates.back() / bw);
      probes.push_back(bw);
    }
  }
  const Stats st = stats(rates);
  const double gbs = wbytes * st.mean / 1e9;
  const std::string frac = fractions.empty()
                               ? "-"
                               : fmt::format("{:.0f}% of {:.1f}", 100.0 * stats(fractions).mean,
                                             stats(probes).mean / 1e9);
  fmt::print("| {:>7} | {:>7} | {:>5} | {:>6} | {:>8.2f} ± {:<5.2f} | {:>12.2f} | {:>18} |\n",
             fmt::format("tg{}", ng), static_cast<int64_t>(prefix.size()), o.threads, blk, st.mean,
             st.sd, gbs, frac);
  if (o.breakdown)
    breakdowns.push_back(decode_breakdown(fmt::format("tg{} at depth {}", ng, prefix.size()),
                                          timed_s, ng * o.reps,
                                          probes.empty() ? 0.0 : stats(probes).mean));
}

// The machine's read bandwidth (the probe stays for tgN's per-run readings) and, unless
// --membw-only, its compute peak.
tools::ComputePeak probe_machine(const BenchOptions& o, ops::ThreadPool& pool,
                                 std::optional<tools::ReadBandwidthProbe>& probe) {
  probe.emplace(pool);
  const double bw = probe->measure();
  fmt::print("memory read bandwidth ({} threads): {:.1f} GB/s\n", o.threads, bw / 1e9);
  if (o.membw_only) return {};
  const tools::ComputePeak peak = tools::measure_compute_peak(pool);
  if (peak.f32 > 0)
    fmt::print(
        "compute peak ({} threads, kernel steps from registers): f32 FMA {:.0f} GFLOP/s | "
        "Q8_0 step {:.0f} GOPS | 4/6-bit step {:.0f} GOPS{}\n",
        o.threads, peak.f32 / 1e9, peak.s8s8 / 1e9, peak.u8s8 / 1e9,
        peak.s8s8_vnni > 0 ? fmt::format(" | VNNI: Q8_0 step {:.0f} GOPS, 4/6-bit step {:.0f} GOPS",
                                         peak.s8s8_vnni / 1e9, peak.u8s8_vnni / 1e9)
                           : "");
  return peak;
}

void print_model_summary(const BenchOptions& o, const Model& model, TensorType kv) {
  const HParams& hp = model.hparams();
  fmt::print("model: {} | {} | {:.1f} MiB weights | simd: {} ({}) | kv: {}\n", o.model,
             hp.summary(), static_cast<double>(model.weight_bytes()) / (1 << 20),
             ops::simd_level_name(ops::simd_level()), ops::cpu_features().summary(), type_name(kv));
  print_kernels(model, kv);
  const KvGeometry kv_geometry = KvGeometry::for_model(hp, kv, 32);
  fmt::print("kv bytes per token: {} ({})", kv_geometry.bytes_per_token(), type_name(kv));
  if (kv_geometry.n_window_layer > 0)  // kept only for the last n_swa positions
    fmt::print(" + {} in the sliding-window layers' pool (last {} positions)",
               kv_geometry.window_bytes_per_token(), kv_geometry.n_swa);
  fmt::print("\n");
}

void print_table_header() {
  fmt::print("\n| {:>7} | {:>7} | {:>5} | {:>6} | {:>16} | {:>12} | {:>18} |\n", "test", "depth",
             "thr", "kv blk", "t/s", "GB/s", "GOPS / % roofline");
  fmt::print("| {:->7} | {:->7} | {:->5} | {:->6} | {:->16} | {:->12} | {:->18} |\n", "", "", "",
             "", "", "", "");
}

// A context for every test at `depth`: room for the longest prompt or generation after it.
ForwardOptions forward_options(const BenchOptions& o, int64_t depth, int64_t blk, TensorType kv) {
  ForwardOptions fo;
  fo.n_ctx = depth +
             std::max(*std::max_element(o.n_prompt.begin(), o.n_prompt.end()),
                      *std::max_element(o.n_gen.begin(), o.n_gen.end())) +
             1;
  fo.kv_type = kv;
  fo.kv_block_tokens = blk;
  return fo;
}

// ppN: a prompt of `np` tokens after `prefix`, o.reps timed runs after a warm-up, with the
// arithmetic rate reached against `roof` (GOPS; 0: unknown).
void time_prompt(const BenchOptions& o, const Model& model, const ForwardOptions& fo,
                 const std::vector<int32_t>& prefix, int64_t np, int64_t blk, ops::ThreadPool& pool,
                 double roof) {
  using Clock = std::chrono::steady_clock;
  const HParams& hp = model.hparams();
  const auto depth = static_cast<int64_t>(prefix.size());
  std::vector<double> rates;
  const std::vector<int32_t> toks = random_tokens(np, hp.n_vocab, 2);
  // One context for all repetitions, cut back to the depth between them (as a server's
  // pool is reused): the KV pages are touched once, in the warm-up run.
  Forward f(model, fo, pool);
  for (int r = 0; r < o.reps + 1; ++r) {  // first run warms up
    rewind_to_depth(f, prefix);
    const auto t0 = Clock::now();
    f.eval(toks);
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (r > 0) rates.push_back(static_cast<double>(np) / s);
  }
  const Stats st = stats(rates);
  const double ops = matmul_ops_per_token(model, false) * static_cast<double>(np) +
                     matmul_ops_per_token(model, true) - matmul_ops_per_token(model, false) +
                     attention_ops(hp, depth, np);
  const double gops = ops / (static_cast<double>(np) / st.mean) / 1e9;
  fmt::print("| {:>7} | {:>7} | {:>5} | {:>6} | {:>8.2f} ± {:<5.2f} | {:>12} | {:>18} |\n",
             fmt::format("pp{}", np), depth, o.threads, blk, st.mean, st.sd, "",
             roof > 0 ? fmt::format("{:.1f} {:.0f}% of {:.0f}", gops, 100 * gops / roof, roof)
                      : fmt::format("{:.1f} GOPS", gops));
}

// The ppN / tgN table over every depth and KV block size, then --breakdown's lines.
void bench_forward(const BenchOptions& o, const Model& model, ops::ThreadPool& pool, TensorType kv,
                   const tools::ComputePeak& peak, tools::ReadBandwidthProbe* probe) {
  print_table_header();
  std::vector<std::string> breakdowns;  // --breakdown: printed after the table
  // Prefill against the step of the FFN's weight type, which holds most of the arithmetic.
  const double roof = tools::compute_peak_for(peak, ffn_weight_type(model)) / 1e9;
  for (int64_t depth : o.depth)
    for (int64_t blk : o.kv_block) {
      const ForwardOptions fo = forward_options(o, depth, blk, kv);
      const std::vector<int32_t> prefix = random_tokens(depth, model.hparams().n_vocab, 1);
      for (int64_t np : o.n_prompt)
        if (np > 0) time_prompt(o, model, fo, prefix, np, blk, pool, roof);
      for (int64_t ng : o.n_gen)
        if (ng > 0) time_generation(o, model, fo, prefix, ng, blk, pool, probe, breakdowns);
    }
  for (const std::string& b : breakdowns) fmt::print("\n{}\n", b);
}

int bench(const BenchOptions& o) {
  Runtime rt(o.threads);
  ops::ThreadPool& pool = rt.pool();
  std::optional<tools::ReadBandwidthProbe> probe;
  tools::ComputePeak peak;
  if (o.membw || o.membw_only) {
    peak = probe_machine(o, pool, probe);
    if (o.membw_only) return 0;
  }
  if (o.model.empty()) fail("bench needs -m MODEL (or --membw-only)");
  rt.load(o.model);
  const Model& model = rt.model();
  const TensorType kv = kv_type_option(o.kv_type);
  print_model_summary(o, model, kv);
  if (!o.concurrency.empty() || o.long_prompt > 0) {
    bench_engine(o, model, rt.tokenizer(), pool, kv);
    return 0;
  }
  bench_forward(o, model, pool, kv, peak, probe ? &*probe : nullptr);
  return 0;
}

// Runs requests on a background engine and waits for all of them; returns wall seconds and
// each request's finishing stats.
struct EngineRun {
  double seconds = 0;
  std::vector<RequestStats> stats;
  std::vector<FinishReason> reasons;
};

EngineRun run_engine(Engine& engine, const std::vector<GenerationRequest>& reqs,
                     const std::vector<double>& submit_delays_ms) {
  std::mutex mu;
  std::condition_variable cv;
  EngineRun out;
  out.stats.resize(reqs.size());
  out.reasons.resize(reqs.size(), FinishReason::Length);
  size_t finished = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < reqs.size(); ++i) {
    if (i < submit_delays_ms.size() && submit_delays_ms[i] > 0)
      std::this_thread::sleep_until(
          t0 + std::chrono::microseconds(static_cast<int64_t>(submit_delays_ms[i] * 1000)));
    GenerationRequest r = reqs[i];
    r.on_event = [&, i](const EngineEvent& e) {
      if (e.kind != EngineEvent::Kind::Finished) return;
      std::lock_guard lock(mu);
      out.stats[i] = e.stats;
      out.reasons[i] = e.reason;
      ++finished;
      cv.notify_all();
    };
    SubmitResult sr = engine.submit(std::move(r));
    if (!sr.ok()) fail("bench: submit refused: {}", sr.error);
  }
  std::unique_lock lock(mu);
  cv.wait(lock, [&] { return finished == reqs.size(); });
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // A figure from a request that did not run to its token limit would be meaningless.
  for (size_t i = 0; i < reqs.size(); ++i)
    if (out.reasons[i] != FinishReason::Length)
      fail("bench: request {} ended early ({})", i, finish_reason_name(out.reasons[i]));
  return out;
}

// A request of random tokens that runs to its token limit.
GenerationRequest bench_request(const Model& model, int64_t n_prompt, int64_t n_gen,
                                uint32_t seed) {
  GenerationRequest r;
  r.prompt = random_tokens(n_prompt, model.hparams().n_vocab, seed);
  r.max_tokens = n_gen;
  r.stop_at_eog = false;
  return r;
}

// The aggregate decode rate of `n` streams of 32-token prompts, `ng` tokens each, on an engine
// of their own.
double concurrent_decode_rate(const BenchOptions& o, const Model& model, const Tokenizer& tok,
                              ops::ThreadPool& pool, TensorType kv, int64_t n, int64_t ng) {
  EngineOptions eo;
  eo.max_running = static_cast<int>(n);
  eo.max_seq_tokens = 32 + ng + 1;
  // Every prompt in the first step, so that the streams decode together from the second
  // (otherwise the first streams' decode time includes the later ones' prefill).
  eo.step_tokens = std::max<int64_t>(eo.step_tokens, 33 * n);
  eo.kv_type = kv;
  eo.kv_block_tokens = o.kv_block.front();
  eo.spec.mode = SpecMode::Off;  // batching alone: drafts would inflate random models' loops
  Engine engine(model, tok, eo, pool);
  engine.start();
  std::vector<GenerationRequest> reqs;
  for (int64_t j = 0; j < n; ++j)
    reqs.push_back(bench_request(model, 32, ng, static_cast<uint32_t>(100 + j)));
  run_engine(engine, {bench_request(model, 32, 4, 99)}, {});  // warm-up
  EngineRun run = run_engine(engine, reqs, {});
  // Decode rate: tokens after each stream's first, over the time all streams were decoding.
  double decode_s = 0;
  for (const auto& st : run.stats) decode_s = std::max(decode_s, st.decode_ms / 1000.0);
  return static_cast<double>(n * (ng - 1)) / decode_s;
}

// agg[i]: the rates of o.concurrency[i] streams, one per round.
void print_concurrency_table(const BenchOptions& o, const std::vector<std::vector<double>>& agg,
                             int64_t ng, size_t rounds) {
  fmt::print(
      "\nconcurrent generation (engine, prompt 32 tokens each, {} generated each; {} "
      "interleaved round{}, median and range):\n",
      ng, rounds, rounds > 1 ? "s" : "");
  fmt::print("| {:>7} | {:>14} | {:>17} | {:>14} | {:>10} |\n", "streams", "aggregate t/s", "range",
             "per stream t/s", "vs first");
  fmt::print("| {:->7} | {:->14} | {:->17} | {:->14} | {:->10} |\n", "", "", "", "", "");
  const double base = median(agg[0]);
  for (size_t i = 0; i < o.concurrency.size(); ++i) {
    const double m = median(agg[i]);
    const auto [lo, hi] = std::minmax_element(agg[i].begin(), agg[i].end());
    fmt::print("| {:>7} | {:>14.2f} | {:>17} | {:>14.2f} | {:>9.2f}x |\n", o.concurrency[i], m,
               fmt::format("{:.1f} - {:.1f}", *lo, *hi), m / static_cast<double>(o.concurrency[i]),
               m / base);
  }
}

// --concurrency: aggregate generation with each number of streams.
void bench_concurrency(const BenchOptions& o, const Model& model, const Tokenizer& tok,
                       ops::ThreadPool& pool, TensorType kv) {
  const int64_t ng = o.n_gen.empty() ? 128 : o.n_gen.front();
  // Decode with one stream is bound by memory bandwidth, with four by arithmetic, and on a
  // shared machine each drifts on its own: the counts run in rounds (1, 2, 4, 1, 2, 4, ...),
  // so that every comparison is between neighbours in time, and the ratio is of medians.
  const auto rounds = static_cast<size_t>(o.reps);
  std::vector<std::vector<double>> agg(o.concurrency.size());
  for (size_t r = 0; r < rounds; ++r)
    for (size_t i = 0; i < o.concurrency.size(); ++i)
      agg[i].push_back(concurrent_decode_rate(o, model, tok, pool, kv, o.concurrency[i], ng));
  print_concurrency_table(o, agg, ng, rounds);
}

void print_ttft_under_prefill(const BenchOptions& o, double idle_ttft,
                              const std::vector<double>& during, double long_ttft) {
  fmt::print("\nTTFT of a 32-token request: idle {:.1f} ms (median of 5)", idle_ttft);
  if (during.empty()) {
    fmt::print("; the {}-token prefill ended before the first arrival\n", o.long_prompt);
    return;
  }
  const double worst = *std::max_element(during.begin(), during.end());
  fmt::print(
      "; arriving during a {}-token prefill ({} arrivals, 613 ms apart) median {:.1f} ms "
      "({:.2f}x idle), worst {:.1f} ms ({:.2f}x idle); the long prompt's own TTFT {:.1f} ms\n",
      o.long_prompt, during.size(), median(during), median(during) / idle_ttft, worst,
      worst / idle_ttft, long_ttft);
}

// --long-prompt: the TTFT of short requests idle and while a long prompt's prefill runs.
void bench_ttft_under_prefill(const BenchOptions& o, const Model& model, const Tokenizer& tok,
                              ops::ThreadPool& pool, TensorType kv) {
  EngineOptions eo;
  eo.max_running = 4;
  eo.max_seq_tokens = o.long_prompt + 64;
  eo.step_tokens = o.step_tokens;
  eo.kv_type = kv;
  eo.kv_block_tokens = o.kv_block.front();
  eo.spec.mode = SpecMode::Off;  // TTFT under a long prefill: scheduling alone
  Engine engine(model, tok, eo, pool);
  engine.start();
  run_engine(engine, {bench_request(model, 32, 2, 98)}, {});  // warm-up
  std::vector<double> idle;
  for (int i = 0; i < 5; ++i)
    idle.push_back(run_engine(engine, {bench_request(model, 32, 1, 50 + i)}, {}).stats[0].ttft_ms);
  // The long prompt first; short requests arrive while its prefill is under way, 613 ms
  // apart (not a multiple of a step, so each lands at another point of the step in flight:
  // the wait for that step is part of what is measured).
  constexpr int kArrivals = 8;
  std::vector<GenerationRequest> reqs{bench_request(model, o.long_prompt, 1, 7)};
  std::vector<double> at{0.0};
  for (int k = 0; k < kArrivals; ++k) {
    reqs.push_back(bench_request(model, 32, 1, static_cast<uint32_t>(60 + k)));
    at.push_back(200.0 + 613.0 * k);
  }
  const EngineRun busy = run_engine(engine, reqs, at);
  std::vector<double> during;  // the arrivals that came before the long prompt was done
  for (int k = 1; k <= kArrivals; ++k)
    if (at[static_cast<size_t>(k)] < busy.stats[0].ttft_ms)
      during.push_back(busy.stats[static_cast<size_t>(k)].ttft_ms);
  print_ttft_under_prefill(o, median(idle), during, busy.stats[0].ttft_ms);
}

void bench_engine(const BenchOptions& o, const Model& model, const Tokenizer& tok,
                  ops::ThreadPool& pool, TensorType kv) {
  if (!o.concurrency.empty()) bench_concurrency(o, model, tok, pool, kv);
  if (o.long_prompt > 0) bench_ttft_under_prefill(o, model, tok, pool, kv);
}

}  // namespace

void add_bench(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand("bench", "Measure prompt processing and generation speed");
  cmd->add_option("-m,--model", o->model, "GGUF model file");
  cmd->add_option("-p,--n-prompt", o->n_prompt, "Prompt lengths (ppN)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("-n,--n-gen", o->n_gen, "Generated tokens (tgN)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("-d,--depth", o->depth, "Tokens already in the cache before each test")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("-t,--threads", o->threads, "Threads")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  cmd->add_option("-r,--repetitions", o->reps, "Repetitions")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  cmd->add_option("--kv-type", o->kv_type, "KV cache type: f32, f16, q8_0, q4_0")
      ->capture_default_str();
  cmd->add_option("--kv-block", o->kv_block, "Tokens per KV block (a list compares sizes)")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{4096}));
  cmd->add_flag("!--no-membw", o->membw, "Skip the memory-bandwidth and compute-peak probes");
  cmd->add_flag("--membw-only", o->membw_only, "Only measure memory read bandwidth");
  cmd->add_flag("--breakdown", o->breakdown,
                "tgN: split the time into matmul regions (with their bandwidth), attention and "
                "the rest");
  cmd->add_option("--concurrency", o->concurrency,
                  "Engine: aggregate generation speed with N streams (e.g. 1,2,4,8)")
      ->delimiter(',');
  cmd->add_option("--step-tokens", o->step_tokens, "Engine tokens per step (--long-prompt)")
      ->capture_default_str();
  cmd->add_option("--long-prompt", o->long_prompt,
                  "Engine: TTFT of a short request submitted during a prefill of this many tokens");
  cmd->callback([&ctx, o] { ctx.exit_code = bench(*o); });
}

}  // namespace hearth::cli
