// An in-process server for tests: a model behind an Engine on its own thread (as `hearth serve`
// runs it), and a Server bound to a free loopback port running on its own thread; ServingFixture
// puts the two together for tests that need their own ServerOptions.
#pragma once

#include <httplib.h>

#include <memory>
#include <string>
#include <thread>

#include "common/shared_data.h"
#include "engine/engine.h"
#include "model/weights.h"
#include "server/server.h"
#include "tokenizer/tokenizer.h"

namespace hearth::test {

struct Backend {
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tok;
  std::unique_ptr<ops::ThreadPool> pool;
  std::unique_ptr<Engine> engine;
  server::ModelInfo info;

  // `id` names the model in /v1/models; the chat template is the file's own (none: ChatML).
  // `kv_bytes`: the KV pool's budget (0: room for every sequence's whole context).
  Backend(const std::string& path, int max_running, int max_queued, int64_t n_ctx = 512,
          const std::string& id = "stories260K", size_t kv_bytes = 0) {
    model = Model::load(path);
    tok = std::make_unique<Tokenizer>(Tokenizer::from_gguf(model->file()));
    pool = std::make_unique<ops::ThreadPool>(2);
    EngineOptions eo;
    eo.max_running = max_running;
    eo.max_queued = max_queued;
    eo.max_seq_tokens = n_ctx;
    eo.kv_bytes = kv_bytes;
    engine = std::make_unique<Engine>(*model, *tok, eo, *pool);
    engine->start();
    info.id = id;
    info.aliases = {id + ".gguf"};
    info.path = path;
    info.n_ctx = n_ctx;
    info.chat_template = model->file().get_string("tokenizer.chat_template");
  }
  ~Backend() { engine->stop(); }
};

struct RunningServer {
  server::Server server;
  std::thread thread;
  int port = 0;
  explicit RunningServer(server::ServerOptions o)
      : server([&] {
          o.port = 0;
          return o;
        }()) {
    port = server.bind();
    thread = std::thread([this] { server.run(); });
  }
  ~RunningServer() {
    server.shutdown();
    thread.join();
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(120, 0);
    return c;
  }
};

// Ends a test suite's server, then its backend (gtest's TearDownTestSuite).
inline void stop_suite(RunningServer*& server, Backend*& backend) {
  delete server;
  delete backend;
  server = nullptr;
  backend = nullptr;
}

// A server with its own options; `with_model` loads stories260K (the caller has checked that it
// exists) and the server turns ready, else it stays "loading".
class ServingFixture {
 public:
  ServingFixture(server::ServerOptions o, bool with_model) : server_(std::move(o)) {
    if (!with_model) return;
    backend_ = std::make_unique<Backend>(shared_path("models/stories260K.gguf"), 4, 16);
    backend_->info.chat_template.reset();
    server_.server.set_backend(*backend_->tok, *backend_->engine, backend_->info);
  }
  int port() const { return server_.port; }
  httplib::Client client() const { return server_.client(); }
  const Tokenizer& tokenizer() const { return *backend_->tok; }

 private:
  std::unique_ptr<Backend> backend_;  // declared first: outlives the server
  RunningServer server_;
};

}  // namespace hearth::test
