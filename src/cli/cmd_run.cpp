// `hearth run -m MODEL -p PROMPT -n N [--temp T] [--seed S]`: one completion, streamed to
// stdout. Statistics go to stderr so stdout is exactly the generated text.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <random>

#include "cli/commands.h"
#include "model/forward.h"
#include "model/reference_forward.h"
#include "model/weights.h"
#include "sampling/basic_sampler.h"
#include "tokenizer/detokenizer.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace hearth::cli {
namespace {

struct RunOptions {
  std::string model;
  std::string prompt;
  std::string prompt_file;
  int64_t n_predict = 128;
  float temperature = 0.8f;
  int64_t seed = -1;
  int64_t n_ctx = 0;
  bool verbose = false;
  int threads = 2;
  std::string kv_type = "f16";
  bool reference = false;
};

void write_out(const std::string& s) {
  if (s.empty()) return;
  std::fwrite(s.data(), 1, s.size(), stdout);
  std::fflush(stdout);
}

int run(const RunOptions& o) {
  using Clock = std::chrono::steady_clock;
  auto t_load = Clock::now();
  auto model = Model::load(o.model);
  Tokenizer tok = Tokenizer::from_gguf(model->file());
  const HParams& hp = model->hparams();

  std::string prompt = o.prompt;
  if (!o.prompt_file.empty()) {
    std::FILE* f = std::fopen(o.prompt_file.c_str(), "rb");
    if (!f) fail("{}: cannot open prompt file", o.prompt_file);
    char buf[65536];
    size_t n;
    prompt.clear();
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) prompt.append(buf, n);
    std::fclose(f);
  }
  std::vector<int32_t> ids = tok.encode(prompt, /*add_special=*/true, /*parse_special=*/true);
  if (ids.empty())
    fail("the prompt is empty and this vocabulary adds no BOS token: nothing to condition on");

  const int64_t n_ctx = o.n_ctx > 0 ? o.n_ctx : std::min<int64_t>(hp.n_ctx_train, 4096);
  if (static_cast<int64_t>(ids.size()) >= n_ctx)
    fail("the prompt has {} tokens, which does not fit the context of {} (use --ctx)", ids.size(),
         n_ctx);
  if (o.n_predict < 0) fail("-n must be >= 0, got {}", o.n_predict);
  const uint64_t seed = o.seed >= 0 ? static_cast<uint64_t>(o.seed) : std::random_device{}();

  // The reference path is the plain f32 oracle; the default is the fast kernels.
  auto kv = type_from_name(o.kv_type);
  if (!kv) fail("unknown KV type '{}' (f32, f16, q8_0)", o.kv_type);
  ops::ThreadPool pool(o.threads);
  std::unique_ptr<ReferenceForward> ref_fwd;
  std::unique_ptr<Forward> fast_fwd;
  if (o.reference) {
    ref_fwd = std::make_unique<ReferenceForward>(*model, n_ctx);
  } else {
    ForwardOptions fo;
    fo.n_ctx = n_ctx;
    fo.kv_type = *kv;
    fast_fwd = std::make_unique<Forward>(*model, fo, pool);
  }
  auto eval = [&](std::span<const int32_t> t) {
    return o.reference ? ref_fwd->eval(t) : fast_fwd->eval(t);
  };
  auto n_past = [&] { return o.reference ? ref_fwd->n_past() : fast_fwd->n_past(); };
  BasicSampler sampler(o.temperature, seed);
  StreamingDetokenizer detok = tok.streaming_detokenizer();
  auto t_start = Clock::now();
  std::vector<float> logits = eval(ids);
  auto t_prompt = Clock::now();

  int64_t n_gen = 0;
  const char* stop = "length";
  while (n_gen < o.n_predict) {
    const int32_t id = sampler.sample(logits);
    ++n_gen;
    if (tok.is_eog(id)) {
      stop = "eos";
      break;
    }
    write_out(detok.push(id));
    if (n_gen == o.n_predict) break;
    if (n_past() >= n_ctx) {
      stop = "context";
      break;
    }
    const int32_t one[1] = {id};
    logits = eval(one);
  }
  write_out(detok.flush());
  if (isatty(fileno(stdout))) write_out("\n");
  auto t_end = Clock::now();

  if (o.verbose) {
    auto ms = [](auto a, auto b) {
      return std::chrono::duration<double, std::milli>(b - a).count();
    };
    const double gen_ms = ms(t_prompt, t_end);
    std::fprintf(stderr,
                 "\nhearth: load %.0f ms | prompt %zu tokens in %.1f ms | generated %lld tokens in "
                 "%.1f ms (%.2f tok/s) | stop: %s | seed %llu\n",
                 ms(t_load, t_start), ids.size(), ms(t_start, t_prompt),
                 static_cast<long long>(n_gen), gen_ms, gen_ms > 0 ? 1000.0 * n_gen / gen_ms : 0.0,
                 stop, static_cast<unsigned long long>(seed));
  }
  return 0;
}

}  // namespace

void add_run(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd =
      app.add_subcommand("run", "Generate a completion for a prompt and stream it to stdout");
  cmd->add_option("-m,--model", o->model, "GGUF model file")->required();
  cmd->add_option("-p,--prompt", o->prompt, "Prompt text (special-token text is parsed)");
  cmd->add_option("-f,--file", o->prompt_file, "Read the prompt from a file");
  cmd->add_option("-n,--n-predict", o->n_predict, "Tokens to generate")->capture_default_str();
  cmd->add_option("--temp", o->temperature, "Temperature (0 = greedy)")->capture_default_str();
  cmd->add_option("--seed", o->seed, "Random seed (-1 = random)")->capture_default_str();
  cmd->add_option("-c,--ctx", o->n_ctx, "Context size (default: min(training context, 4096))");
  cmd->add_flag("-v,--verbose", o->verbose, "Print timing statistics to stderr");
  cmd->add_option("-t,--threads", o->threads, "Threads")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  cmd->add_option("--kv-type", o->kv_type, "KV cache type: f32, f16, q8_0")->capture_default_str();
  cmd->add_flag("--reference", o->reference,
                "Use the plain f32 reference forward pass (slow; the oracle)");
  cmd->callback([&ctx, o] { ctx.exit_code = run(*o); });
}

}  // namespace hearth::cli
