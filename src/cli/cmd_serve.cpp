// `hearth serve [-m MODEL] [--host H] [--port P] ...`: the OpenAI-compatible HTTP server.
// The port is bound first (so /health answers 503 "loading"), then the model is loaded.
// SIGINT/SIGTERM: stop accepting, let in-flight requests finish for --grace ms, cancel the rest;
// during start-up (loading), exit at once. A model that fails to load: exit 1.
#include <pthread.h>

#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <thread>

#include "chat/tool_calls.h"
#include "cli/commands.h"
#include "cli/runtime.h"
#include "cli/spec_options.h"
#include "download/downloader.h"
#include "server/server.h"
#include "server/webui_assets.h"
#include "util/error.h"
#include "util/regular_file.h"
#include "util/system.h"

namespace hearth::cli {
namespace {

struct ServeOptions {
  std::string model;
  std::string alias;
  server::ServerOptions http;
  int threads = 2;
  int64_t n_ctx = 0;
  int parallel = 8;
  int max_queued = 64;
  std::string kv_type = "f16";
  std::string kv_mem;
  std::string cache_dir;
  std::string cache_disk_max = "8G";
  bool cache_shared = false;
  std::string snapshot_mem;
  bool no_cache = false;
  SpecFlags spec;
  std::string max_body = "8M";
  std::string api_key_file;
  double read_timeout_s = 5;
  int grace_ms = 5000;
};

// SIGINT/SIGTERM, from start-up on. They are blocked in every thread (the mask is inherited) and
// taken by one waiter thread: until serving() a signal ends the process at once — the model
// load may be inside a read or a download that cannot be interrupted, and nothing is written
// yet that an exit could lose; after it, wait() hands the signal to the main thread.
class Signals {
 public:
  Signals() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set_, nullptr);
    // Detached: it may sit in sigwait() when serve() returns; the process exit ends it.
    std::thread([s = state_, set = set_] {
      for (int n = 0;; ++n) {
        int sig = 0;
        if (sigwait(&set, &sig) != 0) continue;
        std::unique_lock lock(s->mu);
        if (!s->serving || n > 0) {
          std::fprintf(stderr, "hearth: %s %s: exiting now\n", name(sig),
                       s->serving ? "again" : "during start-up");
          std::_Exit(s->serving ? 1 : 0);
        }
        s->signal = sig;
        s->cv.notify_all();
      }
    }).detach();
  }
  void serving() {
    std::lock_guard lock(state_->mu);
    state_->serving = true;
  }
  // Waits for SIGINT or SIGTERM (a second one exits at once).
  int wait() {
    std::unique_lock lock(state_->mu);
    state_->cv.wait(lock, [&] { return state_->signal != 0; });
    return state_->signal;
  }
  static const char* name(int sig) { return sig == SIGINT ? "SIGINT" : "SIGTERM"; }

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    bool serving = false;
    int signal = 0;
  };
  sigset_t set_;
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

// The key from --api-key-file: its first line, without the line end and surrounding blanks.
std::string read_api_key_file(const std::string& path) {
  constexpr size_t kMaxKeyFile = 4096;
  const auto bytes = read_regular_file(path, kMaxKeyFile + 1);
  if (!bytes) fail("--api-key-file {}: cannot read it (it must be a readable regular file)", path);
  if (bytes->size() > kMaxKeyFile)
    fail("--api-key-file {}: larger than {} bytes", path, kMaxKeyFile);
  std::string key(bytes->begin(), bytes->end());
  key = key.substr(0, key.find_first_of("\r\n"));
  const size_t b = key.find_first_not_of(" \t"), e = key.find_last_not_of(" \t");
  key = b == std::string::npos ? "" : key.substr(b, e - b + 1);
  if (key.empty()) fail("--api-key-file {}: the first line holds no key", path);
  return key;
}

// The checks that need no model, and the HTTP options other flags give: --max-body,
// --cache-shared (needs --cache-dir), --api-key-file, --read-timeout.
void resolve_http_options(ServeOptions& o) {
  auto body = parse_byte_size(o.max_body);
  if (!body || *body == 0) fail("--max-body '{}' is not a size (e.g. 8M)", o.max_body);
  if (o.cache_shared && o.cache_dir.empty())
    fail("--cache-shared needs --cache-dir (the folder the servers share)");
  o.http.max_body_bytes = *body;
  if (!o.api_key_file.empty()) {
    if (!o.http.api_key.empty())
      fail("--api-key-file and --api-key (or $HEARTH_API_KEY) both give a key; give one");
    o.http.api_key = read_api_key_file(o.api_key_file);
  }
  o.http.read_timeout = std::chrono::milliseconds(std::lround(o.read_timeout_s * 1000));
}

// The engine's options from the flags; loads the draft model when one is given.
EngineOptions serve_engine_options(const ServeOptions& o, Runtime& rt, int64_t n_ctx,
                                   TensorType kv) {
  EngineOptions eo;
  eo.max_running = o.parallel;
  eo.max_queued = o.max_queued;
  eo.max_seq_tokens = n_ctx;
  eo.kv_type = kv;
  if (!o.kv_mem.empty()) eo.kv_bytes = size_option("--kv-mem", o.kv_mem);
  eo.prefix_cache = !o.no_cache;
  eo.spec = spec_options(o.spec);
  if (!o.spec.model_draft.empty()) rt.load_draft(o.spec.model_draft);
  eo.cache_dir = o.cache_dir;
  eo.cache_disk_max = size_option("--cache-disk-max", o.cache_disk_max);
  eo.cache_shared = o.cache_shared;
  if (!o.snapshot_mem.empty()) eo.snapshot_bytes = size_option("--snapshot-mem", o.snapshot_mem);
  return eo;
}

// What /v1/models lists: the alias (or the file name), accepted under the path's names too.
server::ModelInfo model_info(const ServeOptions& o, Runtime& rt, int64_t n_ctx) {
  server::ModelInfo info;
  const std::filesystem::path path(o.model);
  info.id = o.alias.empty() ? path.filename().string() : o.alias;
  info.aliases = {o.model, path.filename().string(), path.stem().string()};
  info.path = o.model;
  info.n_ctx = n_ctx;
  info.chat_template = rt.model().file().get_string("tokenizer.chat_template");
  return info;
}

void print_ready(const ServeOptions& o, const server::ModelInfo& info, int port,
                 const EngineMetrics& m) {
  std::fprintf(stderr, "hearth: ready: model '%s', context %lld, %d parallel\n", info.id.c_str(),
               static_cast<long long>(info.n_ctx), o.parallel);
  if (o.http.webui && !server::webui_assets().empty())
    std::fprintf(stderr, "hearth: web chat at http://%s:%d/\n", o.http.host.c_str(), port);
  std::fprintf(stderr, "hearth: KV: %d blocks, %zu bytes per token", m.kv_blocks,
               m.kv_bytes_per_token);
  if (m.kv_window_blocks > 0)  // sliding-window layers: their own, smaller pool
    std::fprintf(stderr, "; sliding-window layers: %d blocks, %zu bytes per token",
                 m.kv_window_blocks, m.kv_window_bytes_per_token);
  std::fprintf(stderr, "\n");
}

// Loads the model (pulling the default one on first use) into `rt`, starts the engine and hands
// it to the server, which has been answering /health with 503 "loading" meanwhile. `rt` is the
// caller's, so that after a failure here the server stops before the engine goes.
void load_backend(ServeOptions& o, server::Server& srv, int port, TensorType kv,
                  std::unique_ptr<Runtime>& rt) {
  if (o.model.empty()) o.model = download::default_model_path();  // pulls on first use
  std::fprintf(stderr, "hearth: listening on http://%s:%d (loading %s)\n", o.http.host.c_str(),
               port, o.model.c_str());
  rt = std::make_unique<Runtime>(o.model, o.threads);
  const int64_t n_ctx = rt->context(o.n_ctx);
  rt->make_engine(serve_engine_options(o, *rt, n_ctx, kv)).start();
  const server::ModelInfo info = model_info(o, *rt, n_ctx);
  srv.set_backend(rt->tokenizer(), rt->engine(), info);
  print_ready(o, info, port, rt->engine().metrics());
}

int serve(ServeOptions o) {
  Signals signals;
  std::signal(SIGPIPE, SIG_IGN);
  resolve_http_options(o);
  const TensorType kv = kv_type_option(o.kv_type);

  // Bound before anything slow (a first-use download, the load): a port in use fails at once,
  // and /health answers 503 "loading" meanwhile.
  server::Server srv(o.http);
  const int port = srv.bind();
  std::thread http([&] { srv.run(); });

  std::unique_ptr<Runtime> rt;
  try {
    load_backend(o, srv, port, kv, rt);
  } catch (const std::exception& e) {
    srv.shutdown();
    http.join();
    // Whatever the layer below threw, a file that does not load (missing, truncated, not a
    // GGUF, a directory) is one line naming it and exit status 1.
    if (dynamic_cast<const Error*>(&e)) throw;
    fail("{}: cannot load the model: {}", o.model, e.what());
  } catch (...) {
    srv.shutdown();
    http.join();
    throw;
  }

  signals.serving();
  const int sig = signals.wait();
  std::fprintf(stderr, "hearth: %s: shutting down (grace %d ms)\n", Signals::name(sig), o.grace_ms);
  srv.shutdown(std::chrono::milliseconds(o.grace_ms));
  http.join();
  rt->engine().stop();
  rt.reset();  // the engine writes the prefix cache's blocks to the disk tier (--cache-dir)
  return 0;
}

void add_model_and_address(CLI::App* cmd, ServeOptions& o) {
  cmd->add_option("-m,--model", o.model,
                  "GGUF model file (default: $HEARTH_MODEL, else " +
                      std::string(download::kDefaultModelSpec) + ", pulled on first use)");
  cmd->add_option("--alias", o.alias, "Model name to list and accept (default: the file name)");
  cmd->add_option("--host", o.http.host, "Address to bind")->capture_default_str();
  cmd->add_option("--port", o.http.port, "Port (0: any free port)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
}

void add_engine_options(CLI::App* cmd, ServeOptions& o) {
  cmd->add_option("-t,--threads", o.threads, "Compute threads")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  cmd->add_option("-c,--ctx", o.n_ctx, "Context per sequence (default: min(training, 4096))");
  cmd->add_option("--parallel", o.parallel, "Sequences decoded together")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  cmd->add_option("--max-queued", o.max_queued, "Waiting requests before 503 busy")
      ->capture_default_str()
      ->check(CLI::Range(0, 100000));
  cmd->add_option("--kv-type", o.kv_type, "KV cache type: f32, f16, q8_0, q4_0")
      ->capture_default_str();
  cmd->add_option("--kv-mem", o.kv_mem, "KV pool budget (e.g. 512M, 2G)");
}

void add_prefix_cache_options(CLI::App* cmd, ServeOptions& o) {
  cmd->add_option("--cache-dir", o.cache_dir,
                  "Disk tier of the prefix cache: evicted KV blocks, kept across restarts");
  cmd->add_option("--cache-disk-max", o.cache_disk_max, "Largest size of --cache-dir")
      ->capture_default_str();
  cmd->add_flag("--cache-shared", o.cache_shared,
                "--cache-dir is shared by several servers: write each KV block there as soon as "
                "it is cached, so another server (or this one after a crash) can resume from it");
  cmd->add_option("--snapshot-mem", o.snapshot_mem,
                  "Hybrid models: memory for the prefix cache's recurrent-state snapshots "
                  "(default: half the KV budget, at least one per sequence)");
  cmd->add_flag("--no-cache", o.no_cache, "Turn the prefix cache off (recompute every prompt)");
}

void add_page_and_access_options(CLI::App* cmd, ServeOptions& o) {
  cmd->add_flag(
      "--no-warm", [&o](int64_t) { o.http.warm = false; },
      "Do not warm a conversation's next turn in the background after a chat reply");
  cmd->add_flag(
      "--no-webui", [&o](int64_t) { o.http.webui = false; },
      "Do not serve the web chat page at / (then / is a 404 like any unknown path)");
  cmd->add_option("--api-key", o.http.api_key,
                  "Require 'Authorization: Bearer KEY' on every endpoint but /health and the web "
                  "chat page (visible to local users in `ps`: prefer $HEARTH_API_KEY or "
                  "--api-key-file)")
      ->envname("HEARTH_API_KEY");
  cmd->add_option("--api-key-file", o.api_key_file,
                  "Read the API key from the first line of this file");
  cmd->add_flag("--cors", o.http.cors, "Send CORS headers (Access-Control-Allow-Origin)");
  cmd->add_option("--cors-origin", o.http.cors_origin, "Allowed origin with --cors")
      ->capture_default_str();
}

void add_http_limits(CLI::App* cmd, ServeOptions& o) {
  cmd->add_option("--max-body", o.max_body, "Largest request body")->capture_default_str();
  cmd->add_option("--http-threads", o.http.http_threads,
                  "Most connections served at once (threads start as needed)")
      ->capture_default_str()
      ->check(CLI::Range(4, 4096));
  cmd->add_option("--read-timeout", o.read_timeout_s,
                  "Seconds a client has to send a request's headers and body (else 408)")
      ->capture_default_str()
      ->check(CLI::Range(0.05, 3600.0));
  cmd->add_option("--coalesce-chars", o.http.coalesce.max_chars,
                  "Streamed text batched up to this many bytes per frame (0: off)")
      ->capture_default_str();
  cmd->add_option("--coalesce-ms", o.http.coalesce.window_ms,
                  "Longest a streamed delta is held, ms (0: off)")
      ->capture_default_str()
      ->check(CLI::Range(0, 10000));
}

void add_tool_format_and_grace(CLI::App* cmd, ServeOptions& o) {
  cmd->add_option("--tool-format", o.http.tool_format,
                  "How the model writes tool calls: auto (from the chat template; hermes when it "
                  "shows none), " +
                      chat::tool_format_names())
      ->capture_default_str()
      ->check([](const std::string& v) {
        return v == "auto" || chat::tool_format_from_name(v)
                   ? std::string()
                   : "unknown tool format '" + v + "' (auto, " + chat::tool_format_names() + ")";
      });
  cmd->add_option("--grace", o.grace_ms, "On SIGINT/SIGTERM, ms to let requests finish")
      ->capture_default_str()
      ->check(CLI::Range(0, 600000));
}

}  // namespace

// In --help order.
void add_serve(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<ServeOptions>();
  CLI::App* cmd = app.add_subcommand("serve", "Serve a model over an OpenAI-compatible HTTP API");
  add_model_and_address(cmd, *o);
  add_engine_options(cmd, *o);
  add_prefix_cache_options(cmd, *o);
  add_spec_options(cmd, o->spec);
  add_page_and_access_options(cmd, *o);
  add_http_limits(cmd, *o);
  add_tool_format_and_grace(cmd, *o);
  cmd->callback([&ctx, o] { ctx.exit_code = serve(*o); });
}

}  // namespace hearth::cli
