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

int run(const RunOptions& o) {
  using Clock = std::chrono::steady_clock;
  auto t_load = Clock::now();
  Runtime rt(o.model, o.threads);
  const Tokenizer& tok = rt.tokenizer();
  const HParams& hp = rt.hparams();

  std::string prompt = o.prompt;
  if (!o.prompt_file.empty()) prompt = read_whole_file(o.prompt_file, "the prompt file");
  const std::shared_ptr<const Grammar> grammar = run_grammar(o);
  std::vector<int32_t> ids = tok.encode(prompt, /*add_special=*/true, /*parse_special=*/true);
  if (ids.empty())
    fail("the prompt is empty and this vocabulary adds no BOS token: nothing to condition on");

  const int64_t n_ctx = rt.context(o.n_ctx);
  if (static_cast<int64_t>(ids.size()) >= n_ctx)
    fail("the prompt has {} tokens, which does not fit the context of {} (use --ctx)", ids.size(),
         n_ctx);
  if (o.n_predict < 0) fail("-n must be >= 0, got {}", o.n_predict);
  validate(o.sampling);
  SamplerParams sampling = o.sampling;
  if (!sampling.seed) sampling.seed = std::random_device{}();
  const uint64_t seed = *sampling.seed;
  const VocabAccess vocab{static_cast<int32_t>(hp.n_vocab),
                          [&](int32_t id) { return tok.token_to_piece(id, true); },
                          [&](std::string_view t) { return tok.encode(t, false, false); }};

  const TensorType kv = kv_type_option(o.kv_type);
  auto t_start = Clock::now();
  int64_t n_gen = 0, n_draft = 0, n_accepted = 0;
  std::string stop = "length";
  double ttft_ms = 0;
  if (o.reference) {
    // The plain f32 oracle, token by token.
    ReferenceForward fwd(rt.model(), n_ctx);
    // The engine's output stage (sampling, detokenizing), without stop strings: the oracle
    // prints every token it generates.
    GenerationRequest req;
    req.sampling = sampling;
    req.grammar = grammar;
    SequenceOutput out(req, tok, vocab, grammar ? build_token_trie(tok, hp.n_vocab) : nullptr);
    std::vector<float> logits = fwd.eval(ids);
    ttft_ms = std::chrono::duration<double, std::milli>(Clock::now() - t_start).count();
    while (n_gen < o.n_predict) {
      const TokenOutput t = out.next(logits, ids);
      ++n_gen;
      if (t.stop) {
        stop = "stop";
        break;
      }
      write_out(t.event.text);
      if (n_gen == o.n_predict) break;
      if (fwd.n_past() >= n_ctx) {
        stop = "context_full";
        break;
      }
      const int32_t one[1] = {t.event.token};
      logits = fwd.eval(one);
    }
    write_out(out.finished(FinishReason::Length, "", {}).text);
  } else {
    // The engine, as the server uses it, with one request.
    EngineOptions eo;
    eo.max_running = 1;
    eo.max_seq_tokens = n_ctx;
    eo.kv_type = kv;
    eo.spec = spec_options(o.spec);
    if (!o.spec.model_draft.empty()) rt.load_draft(o.spec.model_draft);
    if (!o.kv_mem.empty()) eo.kv_bytes = size_option("--kv-mem", o.kv_mem);
    Engine& engine = rt.make_engine(eo);
    GenerationRequest req;
    req.prompt = ids;
    req.sampling = sampling;
    req.stop = o.stop;
    req.max_tokens = o.n_predict;
    req.grammar = grammar;
    req.on_event = [&](const EngineEvent& e) {
      write_out(e.text);  // a Finished event may carry held-back text
      if (e.kind == EngineEvent::Kind::Finished) {
        n_gen = e.stats.generated_tokens;
        n_draft = e.stats.draft_tokens;
        n_accepted = e.stats.draft_accepted;
        ttft_ms = e.stats.ttft_ms;
        stop = finish_reason_name(e.reason);
        if (e.reason == FinishReason::Error || e.reason == FinishReason::GrammarFailed)
          fail("generation failed: {}", e.error);
        if (e.reason == FinishReason::ContextFull)
          std::fprintf(stderr, "\nhearth: stopped early: the context is full%s%s\n",
                       e.error.empty() ? "" : ": ", e.error.c_str());
        if (e.reason == FinishReason::PoolFull)
          std::fprintf(stderr, "\nhearth: stopped early: %s (raise --kv-mem)\n", e.error.c_str());
      }
    };
    SubmitResult r = engine.submit(std::move(req));
    if (!r.ok()) fail("{}", r.error);
    engine.run_until_idle();
  }
  if (isatty(fileno(stdout))) write_out("\n");
  auto t_end = Clock::now();

  if (o.verbose) {
    const double total_ms = std::chrono::duration<double, std::milli>(t_end - t_start).count();
    const double gen_ms = total_ms - ttft_ms;
    std::fprintf(stderr,
                 "\nhearth: load %.0f ms | prompt %zu tokens, first token after %.1f ms | %lld "
                 "tokens in %.1f ms (%.2f tok/s after the first) | stop: %s | seed %llu\n",
                 std::chrono::duration<double, std::milli>(t_start - t_load).count(), ids.size(),
                 ttft_ms, static_cast<long long>(n_gen), total_ms,
                 n_gen > 1 && gen_ms > 0 ? 1000.0 * static_cast<double>(n_gen - 1) / gen_ms : 0.0,
                 stop.c_str(), static_cast<unsigned long long>(seed));
    if (n_draft > 0)
      std::fprintf(stderr, "hearth: drafted %lld tokens, accepted %lld (%.1f%%)\n",
                   static_cast<long long>(n_draft), static_cast<long long>(n_accepted),
                   100.0 * static_cast<double>(n_accepted) / static_cast<double>(n_draft));
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
