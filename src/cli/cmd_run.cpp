// `hearth run -m MODEL -p PROMPT -n N [sampler options] [--grammar-file F | --json-schema S]`:
// one completion, streamed to stdout. Statistics go to stderr so stdout is exactly the
// generated text.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <random>

#include "cli/commands.h"
#include "cli/runtime.h"
#include "cli/sampler_options.h"
#include "cli/spec_options.h"
#include "engine/grammar_vocab.h"
#include "engine/output.h"
#include "model/reference_forward.h"
#include "sampling/grammar.h"
#include "sampling/json_schema_grammar.h"
#include "util/error.h"
#include "util/system.h"

namespace hearth::cli {
namespace {

struct RunOptions {
  std::string model;
  std::string prompt;
  std::string prompt_file;
  int64_t n_predict = 128;
  SamplerParams sampling;
  std::vector<std::string> stop;
  int64_t n_ctx = 0;
  bool verbose = false;
  int threads = 2;
  std::string kv_type = "f16";
  bool reference = false;
  std::string kv_mem;
  std::string grammar_file;  // GBNF
  std::string json_schema;   // JSON text, or @FILE
  SpecFlags spec;
};

void write_out(const std::string& s) {
  if (s.empty()) return;
  std::fwrite(s.data(), 1, s.size(), stdout);
  std::fflush(stdout);
}

std::string read_whole_file(const std::string& path, const char* what) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) fail("{}: cannot open {}", path, what);
  std::string text;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  std::fclose(f);
  return text;
}

// --grammar-file or --json-schema: the grammar every generated token must continue, or null.
std::shared_ptr<const Grammar> run_grammar(const RunOptions& o) {
  if (!o.grammar_file.empty() && !o.json_schema.empty())
    fail("--grammar-file and --json-schema both constrain the output; give one");
  std::string gbnf;
  if (!o.grammar_file.empty()) {
    gbnf = read_whole_file(o.grammar_file, "the grammar file");
  } else if (!o.json_schema.empty()) {
    const std::string text = o.json_schema.front() == '@'
                                 ? read_whole_file(o.json_schema.substr(1), "the JSON Schema file")
                                 : o.json_schema;
    const nlohmann::json schema = nlohmann::json::parse(text, nullptr, false);
    if (schema.is_discarded()) fail("--json-schema: not valid JSON");
    gbnf = json_schema_to_gbnf(schema);
  } else {
    return nullptr;
  }
  return std::make_shared<const Grammar>(Grammar::parse(gbnf));
}

// What a generation reports for --verbose.
struct RunStats {
  int64_t generated = 0;
  int64_t drafted = 0;
  int64_t accepted = 0;
  std::string stop = "length";
  double ttft_ms = 0;
};

// The prompt's tokens (BOS per the vocabulary, special-token text parsed).
std::vector<int32_t> encode_prompt(const Tokenizer& tok, const std::string& prompt) {
  std::vector<int32_t> ids = tok.encode(prompt, /*add_special=*/true, /*parse_special=*/true);
  if (ids.empty())
    fail("the prompt is empty and this vocabulary adds no BOS token: nothing to condition on");
  return ids;
}

void check_run_limits(const RunOptions& o, size_t prompt_tokens, int64_t n_ctx) {
  if (static_cast<int64_t>(prompt_tokens) >= n_ctx)
    fail("the prompt has {} tokens, which does not fit the context of {} (use --ctx)",
         prompt_tokens, n_ctx);
  if (o.n_predict < 0) fail("-n must be >= 0, got {}", o.n_predict);
  validate(o.sampling);
}

// --reference: the plain f32 oracle, token by token, through the engine's output stage
// (sampling, detokenizing) without stop strings: the oracle prints every token it generates.
RunStats run_reference(Runtime& rt, const RunOptions& o, std::vector<int32_t> ids,
                       const SamplerParams& sampling, std::shared_ptr<const Grammar> grammar,
                       int64_t n_ctx, std::chrono::steady_clock::time_point t_start) {
  const Tokenizer& tok = rt.tokenizer();
  const HParams& hp = rt.hparams();
  const VocabAccess vocab{static_cast<int32_t>(hp.n_vocab),
                          [&](int32_t id) { return tok.token_to_piece(id, true); },
                          [&](std::string_view t) { return tok.encode(t, false, false); }};
  RunStats stats;
  ReferenceForward fwd(rt.model(), n_ctx);
  GenerationRequest req;
  req.sampling = sampling;
  req.grammar = grammar;
  SequenceOutput out(req, tok, vocab, grammar ? build_token_trie(tok, hp.n_vocab) : nullptr);
  std::vector<float> logits = fwd.eval(ids);
  stats.ttft_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_start).count();
  while (stats.generated < o.n_predict) {
    const TokenOutput t = out.next(logits, ids);
    ++stats.generated;
    if (t.stop) {
      stats.stop = "stop";
      break;
    }
    write_out(t.event.text);
    if (stats.generated == o.n_predict) break;
    if (fwd.n_past() >= n_ctx) {
      stats.stop = "context_full";
      break;
    }
    const int32_t one[1] = {t.event.token};
    logits = fwd.eval(one);
  }
  write_out(out.finished(FinishReason::Length, "", {}).text);
  return stats;
}

// One request's engine: a single running sequence over the whole context.
EngineOptions run_engine_options(Runtime& rt, const RunOptions& o, int64_t n_ctx, TensorType kv) {
  EngineOptions eo;
  eo.max_running = 1;
  eo.max_seq_tokens = n_ctx;
  eo.kv_type = kv;
  eo.spec = spec_options(o.spec);
  if (!o.spec.model_draft.empty()) rt.load_draft(o.spec.model_draft);
  if (!o.kv_mem.empty()) eo.kv_bytes = size_option("--kv-mem", o.kv_mem);
  return eo;
}

// The request's Finished event: its statistics, and why it stopped when that was not its own
// choice (an error fails the run; a full context or pool is told on stderr).
void record_finish(const EngineEvent& e, RunStats& stats) {
  stats.generated = e.stats.generated_tokens;
  stats.drafted = e.stats.draft_tokens;
  stats.accepted = e.stats.draft_accepted;
  stats.ttft_ms = e.stats.ttft_ms;
  stats.stop = finish_reason_name(e.reason);
  if (e.reason == FinishReason::Error || e.reason == FinishReason::GrammarFailed)
    fail("generation failed: {}", e.error);
  if (e.reason == FinishReason::ContextFull)
    std::fprintf(stderr, "\nhearth: stopped early: the context is full%s%s\n",
                 e.error.empty() ? "" : ": ", e.error.c_str());
  if (e.reason == FinishReason::PoolFull)
    std::fprintf(stderr, "\nhearth: stopped early: %s (raise --kv-mem)\n", e.error.c_str());
}

// The engine, as the server uses it, with one request.
RunStats run_engine(Runtime& rt, const RunOptions& o, std::vector<int32_t> ids,
                    const SamplerParams& sampling, std::shared_ptr<const Grammar> grammar,
                    int64_t n_ctx, TensorType kv) {
  Engine& engine = rt.make_engine(run_engine_options(rt, o, n_ctx, kv));
  RunStats stats;
  GenerationRequest req;
  req.prompt = std::move(ids);
  req.sampling = sampling;
  req.stop = o.stop;
  req.max_tokens = o.n_predict;
  req.grammar = std::move(grammar);
  req.on_event = [&](const EngineEvent& e) {
    write_out(e.text);  // a Finished event may carry held-back text
    if (e.kind == EngineEvent::Kind::Finished) record_finish(e, stats);
  };
  SubmitResult r = engine.submit(std::move(req));
  if (!r.ok()) fail("{}", r.error);
  engine.run_until_idle();
  return stats;
}

void print_run_stats(const RunStats& s, size_t prompt_tokens, uint64_t seed, double load_ms,
                     double total_ms) {
  const double gen_ms = total_ms - s.ttft_ms;
  std::fprintf(
      stderr,
      "\nhearth: load %.0f ms | prompt %zu tokens, first token after %.1f ms | %lld "
      "tokens in %.1f ms (%.2f tok/s after the first) | stop: %s | seed %llu\n",
      load_ms, prompt_tokens, s.ttft_ms, static_cast<long long>(s.generated), total_ms,
      s.generated > 1 && gen_ms > 0 ? 1000.0 * static_cast<double>(s.generated - 1) / gen_ms : 0.0,
      s.stop.c_str(), static_cast<unsigned long long>(seed));
  if (s.drafted > 0)
    std::fprintf(stderr, "hearth: drafted %lld tokens, accepted %lld (%.1f%%)\n",
                 static_cast<long long>(s.drafted), static_cast<long long>(s.accepted),
                 100.0 * static_cast<double>(s.accepted) / static_cast<double>(s.drafted));
}

int run(const RunOptions& o) {
  using Clock = std::chrono::steady_clock;
  using Ms = std::chrono::duration<double, std::milli>;
  const auto t_load = Clock::now();
  Runtime rt(o.model, o.threads);
  const Tokenizer& tok = rt.tokenizer();

  const std::string prompt =
      o.prompt_file.empty() ? o.prompt : read_whole_file(o.prompt_file, "the prompt file");
  const std::shared_ptr<const Grammar> grammar = run_grammar(o);
  std::vector<int32_t> ids = encode_prompt(tok, prompt);
  const size_t n_prompt = ids.size();
  const int64_t n_ctx = rt.context(o.n_ctx);
  check_run_limits(o, n_prompt, n_ctx);
  SamplerParams sampling = o.sampling;
  if (!sampling.seed) sampling.seed = std::random_device{}();

  const TensorType kv = kv_type_option(o.kv_type);
  const auto t_start = Clock::now();
  const RunStats stats =
      o.reference ? run_reference(rt, o, std::move(ids), sampling, grammar, n_ctx, t_start)
                  : run_engine(rt, o, std::move(ids), sampling, grammar, n_ctx, kv);
  if (isatty(fileno(stdout))) write_out("\n");
  const auto t_end = Clock::now();
  if (o.verbose)
    print_run_stats(stats, n_prompt, *sampling.seed, Ms(t_start - t_load).count(),
                    Ms(t_end - t_start).count());
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
  add_sampler_options(cmd, o->sampling);
  add_spec_options(cmd, o->spec);
  cmd->add_option("--stop", o->stop, "Stop string (repeatable; not printed)");
  cmd->add_option("-c,--ctx", o->n_ctx, "Context size (default: min(training context, 4096))");
  cmd->add_flag("-v,--verbose", o->verbose, "Print timing statistics to stderr");
  cmd->add_option("-t,--threads", o->threads, "Threads")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  cmd->add_option("--kv-type", o->kv_type, "KV cache type: f32, f16, q8_0, q4_0")
      ->capture_default_str();
  cmd->add_option("--kv-mem", o->kv_mem,
                  "KV pool budget (e.g. 512M, 2G; default: the context, at most half of free RAM)");
  cmd->add_option("--grammar-file", o->grammar_file,
                  "Constrain the output to a GBNF grammar (llama.cpp's syntax) read from a file");
  cmd->add_option("--json-schema", o->json_schema,
                  "Constrain the output to JSON valid under this JSON Schema (text, or @FILE)");
  cmd->add_flag("--reference", o->reference,
                "Use the plain f32 reference forward pass (slow; the oracle)");
  cmd->callback([&ctx, o] { ctx.exit_code = run(*o); });
}

}  // namespace hearth::cli
