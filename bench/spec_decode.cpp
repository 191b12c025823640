// Decode speed with and without speculative decoding (engine/speculation.h), in one run: the
// same greedy request through an engine with --spec off, one with --spec ngram and, given a
// draft model, one with --spec draft, alternated repetition by repetition, each from a cold
// cache. Prints decode tok/s (after the first token) for each, the ratio to off, the drafts'
// acceptance, and whether the outputs are identical (they must be: the bench fails otherwise).
//
//   spec_decode [--model PATH] [--draft PATH] [--prompt TEXT | --prompt-file PATH] [-n N]
//               [--reps R] [--threads T] [--draft-max K] [--ctx N]
//
// The default prompt, for the default model (../shared/models/stories260K.gguf), tells a story
// and then starts telling it again: the continuation repeats text from the prompt (kStory).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "model/weights.h"

namespace {

using namespace hearth;

std::string shared_dir() {
  if (const char* env = std::getenv("HEARTH_SHARED_DIR"); env && *env) return env;
  return HEARTH_SHARED_DIR_DEFAULT;
}

// A story told, then begun again: the opening P ("Once upon a time, ... in the park."), the
// model's own greedy continuation S of P + S + "\n" + P (found by iterating from S = its
// continuation of P alone until it repeated itself: 3 rounds), then P. The model retells S:
// the continuation repeats text from the prompt.
const char* kStory =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the p"
    "ark. One day, Lily's mom told her that it was time to go home, but Lily didn't want to g"
    "o to the park. She told her mom about her toys and her mom.\nLily was sad and didn't kno"
    "w what to do. She told her mom about her toys and her mom. Her mom said, \"Don't worry, "
    "Lily. We can help you.\" Lily was happy to help her mom.\nAfter they finished playing, L"
    "ily's mom came\nOnce upon a time, there was a little girl named Lily. She loved to play "
    "outside in the park.";

struct Run {
  std::vector<int32_t> tokens;
  RequestStats stats;
};

Run generate(Engine& engine, const std::string& prompt, int64_t n) {
  Run run;
  GenerationRequest r;
  r.prompt_text.text = prompt;
  r.max_tokens = n;
  r.stop_at_eog = false;
  r.on_event = [&](const EngineEvent& e) {
    if (e.kind == EngineEvent::Kind::Token) run.tokens.push_back(e.token);
    if (e.kind == EngineEvent::Kind::Finished) run.stats = e.stats;
  };
  if (!engine.submit(std::move(r)).ok()) throw std::runtime_error("submit refused");
  engine.run_until_idle();
  return run;
}

double tok_per_s(const RequestStats& s) {
  return s.decode_ms > 0 ? 1000.0 * static_cast<double>(s.generated_tokens - 1) / s.decode_ms : 0.0;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("Decode tok/s with --spec off and --spec ngram, side by side");
  std::string model_path = shared_dir() + "/models/stories260K.gguf";
  std::string prompt = kStory, prompt_file, draft_path;
  int64_t n = 150, ctx = 0;
  int reps = 9, threads = 2, draft_max = 16;
  app.add_option("--model", model_path)->capture_default_str();
  app.add_option("--draft", draft_path, "draft model (--spec draft)");
  app.add_option("--prompt", prompt);
  app.add_option("--prompt-file", prompt_file);
  app.add_option("-n", n)->capture_default_str();
  app.add_option("--reps", reps)->capture_default_str();
  app.add_option("--threads", threads)->capture_default_str();
  app.add_option("--draft-max", draft_max)->capture_default_str();
  app.add_option("--ctx", ctx, "context (default: the model's, at most 4096)");
  CLI11_PARSE(app, argc, argv);
  if (!prompt_file.empty()) {
    std::ifstream f(prompt_file, std::ios::binary);
    prompt.assign(std::istreambuf_iterator<char>(f), {});
  }
  try {
    auto model = Model::load(model_path);
    const Tokenizer tok = Tokenizer::from_gguf(model->file());
    ops::ThreadPool pool(threads);
    std::unique_ptr<Model> draft;
    if (!draft_path.empty()) draft = Model::load(draft_path);
    auto engine = [&](SpecMode mode) {
      EngineOptions o;
      o.max_running = 1;
      o.max_seq_tokens = ctx > 0 ? ctx : std::min<int64_t>(model->hparams().n_ctx_train, 4096);
      o.prefix_cache = false;  // every repetition decodes from a cold start
      o.spec.mode = mode;
      o.spec.draft_max = draft_max;
      o.draft_model = draft.get();
      return std::make_unique<Engine>(*model, tok, o, pool);
    };
    std::vector<SpecMode> modes = {SpecMode::Off, SpecMode::Ngram};
    if (draft) modes.push_back(SpecMode::Draft);
    std::vector<std::unique_ptr<Engine>> engines;
    for (SpecMode m : modes) {
      engines.push_back(engine(m));
      generate(*engines.back(), prompt, 8);  // warm-up: pages, caches
    }
    std::vector<std::vector<double>> speed(modes.size());
    std::vector<int64_t> drafted(modes.size()), accepted(modes.size()), generated(modes.size());
    bool same = true;
    std::vector<int32_t> plain;
    for (int r = 0; r < reps; ++r) {
      for (size_t m = 0; m < modes.size(); ++m) {
        const Run run = generate(*engines[m], prompt, n);
        if (m == 0) plain = run.tokens;
        same = same && run.tokens == plain;
        speed[m].push_back(tok_per_s(run.stats));
        drafted[m] += run.stats.draft_tokens;
        accepted[m] += run.stats.draft_accepted;
        generated[m] += run.stats.generated_tokens;
      }
    }
    fmt::print("model {} | draft {} | {} threads | {} tokens x {} reps | draft-max {}\n",
               model_path, draft_path.empty() ? "-" : draft_path, threads, n, reps, draft_max);
    const double base = median(speed[0]);
    for (size_t m = 0; m < modes.size(); ++m) {
      const double v = median(speed[m]);
      fmt::print("{:>6}: decode {:.1f} tok/s (median) = {:.2f}x off", spec_mode_name(modes[m]), v,
                 base > 0 ? v / base : 0.0);
      if (m > 0)
        fmt::print(" | {} drafted, {} accepted ({:.1f}%), {:.2f} accepted per generated token",
                   drafted[m], accepted[m],
                   drafted[m] ? 100.0 * static_cast<double>(accepted[m]) / drafted[m] : 0.0,
                   generated[m] ? static_cast<double>(accepted[m]) / generated[m] : 0.0);
      fmt::print("\n");
    }
    fmt::print("outputs {}\n", same ? "identical" : "DIFFER");
    return same ? 0 : 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "spec_decode: {}\n", e.what());
    return 1;
  }
}
