// Chat replay: drives the engine the way chat clients do — S sessions x T turns, a shared system
// prompt, varied user messages, each reply fed back into the history as text — and reports, per
// turn, time to first token and prompt tokens prefilled vs new. The engine runs on its own
// thread as in `hearth serve`, and each request is sent only after the previous one finished
// (round-robin) or the whole turn did (--concurrent); --gap-ms adds the user's reading pause
// before each session's next turn. Each turn's TTFT is printed next to a cold prefill of the
// same number of tokens (pp_ms): a turn that costs what its new text costs matches it.
//
//   chat_replay -m MODEL [--sessions 4] [--turns 8] [--concurrent] [--gap-ms 0] [--kv-mem 1G]
//               [--kv-type f16] [--cache-dir DIR] [--no-cache] [--from 1] [--transcript FILE]
//               [-t 2]
//
// --from K with --transcript FILE continues conversations saved by an earlier run (restart test:
// run turns 1-4 with --turns 4, then --from 5 --turns 8 with the same --cache-dir).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <random>
#include <thread>

#include "engine/engine.h"
#include "ops/attention.h"
#include "util/system.h"

using namespace hearth;

namespace {

const char* kWords[] = {
    "river",   "mountain", "quiet",   "engine", "paper",   "orange",  "window",  "garden",
    "silver",  "station",  "winter",  "market", "journey", "little",  "forest",  "lantern",
    "memory",  "harbor",   "signal",  "copper", "meadow",  "thunder", "library", "candle",
    "pattern", "voyage",   "crystal", "shadow", "morning", "bridge",  "compass", "orchard",
    "planet",  "whisper",  "marble",  "velvet", "island",  "circuit", "feather", "canyon",
    "basket",  "glacier",  "rhythm",  "saddle", "tunnel",  "violet",  "anchor",  "blossom",
    "kernel",  "ladder",   "mirror",  "needle", "pebble",  "quarter", "ribbon",  "summit",
    "ticket",  "umbrella", "valley",  "wander", "yellow",  "zephyr",  "cobalt",  "driftwood"};

std::string sentence(std::mt19937& rng, int words) {
  std::string s;
  std::uniform_int_distribution<size_t> pick(0, std::size(kWords) - 1);
  for (int i = 0; i < words; ++i) {
    std::string w = kWords[pick(rng)];
    if (i == 0) w[0] = static_cast<char>(std::toupper(w[0]));
    s += (i ? " " : "") + w;
    if (i % 11 == 10) s += ",";
  }
  return s + ". ";
}

struct Message {
  std::string role, content;
};

// ChatML, as Qwen's templates write it; the template's own text may carry control tokens, the
// message content may not.
TextPrompt render(const std::vector<Message>& msgs) {
  TextPrompt p;
  p.add_special = true;
  for (const Message& m : msgs) {
    const size_t b = p.text.size();
    p.text += "<|im_start|>" + m.role + "\n";
    p.special_ranges.push_back({b, p.text.size()});
    p.text += m.content;
    const size_t e = p.text.size();
    p.text += "<|im_end|>\n";
    p.special_ranges.push_back({e, p.text.size()});
  }
  const size_t b = p.text.size();
  p.text += "<|im_start|>assistant\n";
  p.special_ranges.push_back({b, p.text.size()});
  return p;
}

struct TurnStats {
  double ttft_ms = 0;
  int64_t prompt = 0, cached = 0, prefilled = 0, fresh = 0;
};

// Counts finished requests of an engine running on its own thread.
struct Finishes {
  std::mutex mu;
  std::condition_variable cv;
  int64_t n = 0;
  void add() {
    std::lock_guard lock(mu);
    ++n;
    cv.notify_all();
  }
  void wait_for(int64_t target) {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return n >= target; });
  }
};

// TTFT of one request for a prompt of token ids (max one generated token, stored in *reply).
double ttft_of(Engine& engine, Finishes& done, int64_t& submitted, std::vector<int32_t> prompt,
               int32_t* reply = nullptr) {
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.max_tokens = 1;
  double ttft = 0;
  r.on_event = [&](const EngineEvent& e) {
    if (e.kind == EngineEvent::Kind::Token && reply) *reply = e.token;
    if (e.kind != EngineEvent::Kind::Finished) return;
    ttft = e.stats.ttft_ms;
    done.add();
  };
  if (!engine.submit(std::move(r)).ok()) return 0;
  done.wait_for(++submitted);
  return ttft;
}

// What prefilling `n` tokens costs on its own, after `depth` cached tokens (a random prompt of
// `depth` tokens is computed first, then extended by its reply token and `n` more, as a chat
// turn continues after the reply: a hybrid resumes from the reply's end snapshot, not from a
// recomputed prefix): the figure a turn's TTFT is set against. Random ids from the middle of
// the vocabulary match no cached conversation.
double cold_prefill_ms(Engine& engine, Finishes& done, int64_t& submitted, int64_t n, int64_t depth,
                       int32_t n_vocab, std::mt19937& rng) {
  if (n <= 0) return 0;
  std::uniform_int_distribution<int32_t> id(n_vocab / 4, n_vocab / 2);
  std::vector<int32_t> prompt;
  for (int64_t i = 0; i < depth; ++i) prompt.push_back(id(rng));
  if (depth > 0) {
    int32_t reply = -1;
    ttft_of(engine, done, submitted, prompt, &reply);
    if (reply >= 0) prompt.push_back(reply);
  }
  for (int64_t i = 0; i < n; ++i) prompt.push_back(id(rng));
  return ttft_of(engine, done, submitted, std::move(prompt));
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Per turn: the median TTFT and prefill against a prefill of that many tokens, from an empty
// context (pp_ms@0) and after as many cached tokens as the turn had (pp_ms@cached).
void print_against_cold_prefill(const std::vector<std::vector<TurnStats>>& stats, int from,
                                int turns, Engine& engine, Finishes& done, int64_t& submitted,
                                int32_t n_vocab) {
  std::mt19937 rng(99);
  std::printf("\n%5s %10s %8s %8s %10s %13s %10s\n", "turn", "ttft_ms", "prefill", "cached",
              "pp_ms@0", "pp_ms@cached", "ttft/pp@c");
  for (int t = from; t <= turns; ++t) {
    std::vector<double> ttft, prefill, cached;
    for (const TurnStats& x : stats[static_cast<size_t>(t)]) {
      ttft.push_back(x.ttft_ms);
      prefill.push_back(static_cast<double>(x.prefilled));
      cached.push_back(static_cast<double>(x.cached));
    }
    const auto n = static_cast<int64_t>(median(prefill));
    const auto depth = static_cast<int64_t>(median(cached));
    const double pp0 = cold_prefill_ms(engine, done, submitted, n, 0, n_vocab, rng);
    const double pp = cold_prefill_ms(engine, done, submitted, n, depth, n_vocab, rng);
    std::printf("%5d %10.1f %8lld %8lld %10.1f %13.1f %10.2f\n", t, median(ttft),
                static_cast<long long>(n), static_cast<long long>(depth), pp0, pp,
                pp > 0 ? median(ttft) / pp : 0.0);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"chat replay benchmark"};
  std::string model_path, kv_mem, kv_type = "f16", cache_dir, transcript;
  int sessions = 4, turns = 8, from = 1, threads = 2, reply_tokens = 32, user_words = 60;
  int gap_ms = 0;
  int64_t kv_block = EngineOptions{}.kv_block_tokens;
  bool concurrent = false, no_cache = false;
  app.add_option("-m,--model", model_path)->required();
  app.add_option("--sessions", sessions);
  app.add_option("--turns", turns, "last turn to run");
  app.add_option("--from", from, "first turn to run (needs --transcript for earlier turns)");
  app.add_option("--reply-tokens", reply_tokens);
  app.add_option("--user-words", user_words);
  app.add_flag("--concurrent", concurrent, "all sessions' turns at once (default: round-robin)");
  app.add_option("--gap-ms", gap_ms, "idle pause before each session's next turn (reading)");
  app.add_option("--kv-mem", kv_mem);
  app.add_option("--kv-type", kv_type, "KV cache type: f32, f16, q8_0, q4_0");
  app.add_option("--kv-block", kv_block, "tokens per KV block")->check(CLI::Range(1, 4096));
  app.add_option("--cache-dir", cache_dir);
  app.add_flag("--no-cache", no_cache);
  app.add_option("--transcript", transcript, "conversations file (read with --from, written)");
  app.add_option("-t,--threads", threads);
  CLI11_PARSE(app, argc, argv);

  const auto kv = type_from_name(kv_type);
  if (!kv || !ops::kv_type_supported(*kv)) {
    std::fprintf(stderr, "unknown KV type '%s' (f32, f16, q8_0, q4_0)\n", kv_type.c_str());
    return 2;
  }
  auto model = Model::load(model_path);
  const Tokenizer tok = Tokenizer::from_gguf(model->file());
  ops::ThreadPool pool(threads);
  EngineOptions eo;
  eo.max_running = std::max(4, sessions);
  eo.max_seq_tokens = 8192;
  eo.kv_block_tokens = kv_block;
  eo.kv_type = *kv;
  eo.prefix_cache = !no_cache;
  eo.cache_dir = cache_dir;
  if (!kv_mem.empty()) eo.kv_bytes = parse_byte_size(kv_mem).value_or(0);
  auto t_load = std::chrono::steady_clock::now();
  Engine engine(*model, tok, eo, pool);
  std::printf(
      "model %s | KV %s, %zu bytes/token, pool %d blocks | cache %s%s | load %.0f ms\n",
      model_path.c_str(), std::string(type_name(*kv)).c_str(), engine.kv_bytes_per_token(),
      engine.kv_pool().n_blocks(), no_cache ? "off" : "on",
      cache_dir.empty() ? "" : (" + disk " + cache_dir).c_str(),
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_load).count());

  std::mt19937 rng(1234);
  std::string system = "You are a helpful assistant. ";
  for (int i = 0; i < 12; ++i) system += sentence(rng, 14);
  std::vector<std::vector<Message>> conv(static_cast<size_t>(sessions));
  std::vector<int64_t> known(static_cast<size_t>(sessions), 0);  // tokens the server has seen
  if (from > 1) {
    std::ifstream in(transcript);
    if (!in) {
      std::fprintf(stderr, "--from %d needs --transcript with the earlier turns\n", from);
      return 1;
    }
    const auto j = nlohmann::json::parse(in);
    for (size_t s = 0; s < conv.size(); ++s) {
      for (const auto& m : j["sessions"][s]["messages"])
        conv[s].push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
      known[s] = j["sessions"][s]["known"].get<int64_t>();
    }
  } else {
    for (auto& c : conv) c.push_back({"system", system});
  }
  // Each session's user messages come from its own stream, whatever turns this run covers.
  std::vector<std::mt19937> user_rng;
  for (int s = 0; s < sessions; ++s) user_rng.emplace_back(1000 + s);
  for (int t = 1; t < from; ++t)
    for (auto& r : user_rng) (void)sentence(r, user_words);

  std::printf("\n%5s %10s %10s %8s %8s %8s %8s\n", "turn", "ttft_ms", "ttft_max", "prompt", "new",
              "cached", "prefill");
  std::vector<std::vector<TurnStats>> stats(static_cast<size_t>(turns + 1));
  engine.start();  // as `hearth serve` runs it: the engine thread sleeps whenever it is idle
  Finishes done;
  int64_t submitted = 0;
  int64_t total_new = 0, total_prefilled = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int t = from; t <= turns; ++t) {
    std::vector<std::string> replies(static_cast<size_t>(sessions));
    std::vector<TurnStats> ts(static_cast<size_t>(sessions));
    auto submit = [&](int s) {
      auto& c = conv[static_cast<size_t>(s)];
      c.push_back({"user", sentence(user_rng[static_cast<size_t>(s)], user_words)});
      GenerationRequest r;
      r.prompt_text = render(c);
      SamplerParams sp;
      sp.temperature = 0;
      r.sampling = sp;
      r.max_tokens = reply_tokens;
      r.on_event = [&, s](const EngineEvent& e) {
        auto& st = ts[static_cast<size_t>(s)];
        replies[static_cast<size_t>(s)] += e.text;  // Finished may carry held-back text
        if (e.kind == EngineEvent::Kind::Finished) {
          st.ttft_ms = e.stats.ttft_ms;
          st.prompt = e.stats.prompt_tokens;
          st.cached = e.stats.cached_tokens;
          st.prefilled = e.stats.prefilled_tokens;
          // New: what the server has not seen in this conversation (the shared system prompt
          // counts as seen after the first session's first turn).
          st.fresh = e.stats.prompt_tokens - known[static_cast<size_t>(s)];
          known[static_cast<size_t>(s)] = e.stats.prompt_tokens + e.stats.generated_tokens;
          done.add();
        }
      };
      if (!engine.submit(std::move(r)).ok()) std::fprintf(stderr, "submit refused\n");
    };
    for (int s = 0; s < sessions; ++s) {
      if (t == 1 && s > 0 && known[static_cast<size_t>(s)] == 0) {
        // The rendered system block is shared with session 0.
        TextPrompt sys = render({{"system", system}});
        const size_t cut = sys.text.rfind("<|im_start|>assistant\n");
        known[static_cast<size_t>(s)] =
            static_cast<int64_t>(tok.encode(sys.text.substr(0, cut), true, true).size());
      }
      submit(s);
      if (!concurrent) {
        done.wait_for(++submitted);
        std::this_thread::sleep_for(std::chrono::milliseconds(gap_ms));
      }
    }
    if (concurrent) {
      done.wait_for(submitted += sessions);
      std::this_thread::sleep_for(std::chrono::milliseconds(gap_ms));
    }
    std::vector<double> ttft;
    double worst = 0;
    TurnStats sum;
    for (int s = 0; s < sessions; ++s) {
      const TurnStats& x = ts[static_cast<size_t>(s)];
      conv[static_cast<size_t>(s)].push_back({"assistant", replies[static_cast<size_t>(s)]});
      ttft.push_back(x.ttft_ms);
      worst = std::max(worst, x.ttft_ms);
      sum.prompt += x.prompt;
      sum.cached += x.cached;
      sum.prefilled += x.prefilled;
      sum.fresh += x.fresh;
    }
    stats[static_cast<size_t>(t)] = ts;
    total_new += sum.fresh;
    total_prefilled += sum.prefilled;
    std::printf("%5d %10.1f %10.1f %8lld %8lld %8lld %8lld\n", t, median(ttft), worst,
                static_cast<long long>(sum.prompt / sessions),
                static_cast<long long>(sum.fresh / sessions),
                static_cast<long long>(sum.cached / sessions),
                static_cast<long long>(sum.prefilled / sessions));
    std::fflush(stdout);
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  print_against_cold_prefill(stats, from, turns, engine, done, submitted,
                             static_cast<int32_t>(model->hparams().n_vocab));
  const EngineMetrics m = engine.metrics();
  std::printf(
      "\nprefilled / new tokens: %lld / %lld = %.3f | wall %.1f s\n",
      static_cast<long long>(total_prefilled), static_cast<long long>(total_new),
      total_new ? static_cast<double>(total_prefilled) / static_cast<double>(total_new) : 0.0,
      wall);
  if (from <= 2 && turns >= 2) {
    std::vector<double> a, b;
    for (const auto& x : stats[2]) a.push_back(x.ttft_ms);
    for (const auto& x : stats[static_cast<size_t>(turns)]) b.push_back(x.ttft_ms);
    std::printf("median TTFT turn %d / turn 2: %.1f / %.1f ms = %.2f\n", turns, median(b),
                median(a), median(a) > 0 ? median(b) / median(a) : 0.0);
  }
  std::printf(
      "cache: evictions %lld, disk hits %lld tokens, disk writes %lld, reads %lld, "
      "rejected %lld\n",
      static_cast<long long>(m.cache.evictions), static_cast<long long>(m.cache.disk_hit_tokens),
      static_cast<long long>(m.disk.writes), static_cast<long long>(m.disk.reads),
      static_cast<long long>(m.disk.rejected));
  if (m.state_slot_bytes > 0) {  // hybrid models: the recurrent-state snapshots
    const double held =
        static_cast<double>(m.cache.snapshots) * static_cast<double>(m.state_slot_bytes);
    const auto cached_tokens =
        static_cast<double>(m.cache.resident_blocks * static_cast<int64_t>(kv_block));
    std::printf(
        "snapshots: %lld held (%.1f MB, %.2f MB each) for %.0f cached tokens = %.1f MB per "
        "1,000 tokens; %lld taken, %lld evicted, %lld hits (%lld from disk), %lld matched "
        "tokens cut back\n",
        static_cast<long long>(m.cache.snapshots), held / 1e6,
        static_cast<double>(m.state_slot_bytes) / 1e6, cached_tokens,
        cached_tokens > 0 ? held / 1e6 * 1000.0 / cached_tokens : 0.0,
        static_cast<long long>(m.cache.snapshots_inserted),
        static_cast<long long>(m.cache.snapshot_evictions),
        static_cast<long long>(m.cache.snapshot_hits),
        static_cast<long long>(m.cache.snapshot_disk_hits),
        static_cast<long long>(m.cache.cut_tokens));
  }
  if (!transcript.empty()) {
    nlohmann::json j;
    for (size_t s = 0; s < conv.size(); ++s) {
      nlohmann::json msgs = nlohmann::json::array();
      for (const auto& msg : conv[s])
        msgs.push_back({{"role", msg.role}, {"content", msg.content}});
      j["sessions"].push_back({{"messages", msgs}, {"known", known[s]}});
    }
    std::ofstream(transcript) << j.dump();
  }
  return 0;
}
