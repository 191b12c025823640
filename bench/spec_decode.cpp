// Decode speed with and without speculative decoding (engine/speculation.h), in one run: the
// same greedy request through an engine with --spec off and one with --spec ngram, alternated
// repetition by repetition, each from a cold cache. Prints decode tok/s (after the first token)
// for both, their ratio, the drafts' acceptance, and whether the outputs are identical (they
// must be: the bench fails otherwise).
//
//   spec_decode [--model PATH] [--prompt TEXT | --prompt-file PATH] [-n N] [--reps R]
//               [--threads T] [--draft-max K] [--ctx N]
//
// The default prompt, for the default model (../shared/models/stories260K.gguf), tells a story
// and then starts telling it again: the continuation repeats text from the prompt.
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

const char* kStory =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
    "park. One day, she saw a big red ball in the park. She ran to the ball and picked it up. "
    "She was very happy. Lily played with the ball all day long. When it was time to go home, "
    "she said goodbye to the ball and went home with her mom.\n"
    "Once upon a time, there was a little girl named Lily. She loved to";

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
  return s.decode_ms > 0 ? 1000.0 * static_cast<double>(s.generated_tokens - 1) / s.decode_ms
                         : 0.0;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("Decode tok/s with --spec off and --spec ngram, side by side");
  std::string model_path = shared_dir() + "/models/stories260K.gguf";
  std::string prompt = kStory, prompt_file;
  int64_t n = 256, ctx = 0;
  int reps = 9, threads = 2, draft_max = 16;
  app.add_option("--model", model_path)->capture_default_str();
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
    auto engine = [&](SpecMode mode) {
      EngineOptions o;
      o.max_running = 1;
      o.max_seq_tokens = ctx > 0 ? ctx : std::min<int64_t>(model->hparams().n_ctx_train, 4096);
      o.prefix_cache = false;  // every repetition decodes from a cold start
      o.spec.mode = mode;
      o.spec.draft_max = draft_max;
      return std::make_unique<Engine>(*model, tok, o, pool);
    };
    auto off = engine(SpecMode::Off), on = engine(SpecMode::Ngram);
    generate(*off, prompt, 8);  // warm-up: pages, caches
    generate(*on, prompt, 8);
    std::vector<double> t_off, t_on;
    int64_t drafted = 0, accepted = 0, generated = 0;
    bool same = true;
    for (int r = 0; r < reps; ++r) {
      const Run a = generate(*off, prompt, n);
      const Run b = generate(*on, prompt, n);
      same = same && a.tokens == b.tokens;
      t_off.push_back(tok_per_s(a.stats));
      t_on.push_back(tok_per_s(b.stats));
      drafted += b.stats.draft_tokens;
      accepted += b.stats.draft_accepted;
      generated += b.stats.generated_tokens;
    }
    const double m_off = median(t_off), m_on = median(t_on);
    fmt::print("model {} | {} threads | {} tokens x {} reps | draft-max {}\n", model_path,
               threads, n, reps, draft_max);
    fmt::print("decode tok/s (median): off {:.1f} | ngram {:.1f} | ratio {:.2f}x\n", m_off, m_on,
               m_off > 0 ? m_on / m_off : 0.0);
    fmt::print(
        "drafts: {} drafted, {} accepted ({:.1f}%), {:.2f} accepted per generated token; "
        "outputs {}\n",
        drafted, accepted, drafted ? 100.0 * static_cast<double>(accepted) / drafted : 0.0,
        generated ? static_cast<double>(accepted) / generated : 0.0,
        same ? "identical" : "DIFFER");
    return same ? 0 : 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "spec_decode: {}\n", e.what());
    return 1;
  }
}
