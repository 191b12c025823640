// A real server over loopback for the tests that need their own ServerOptions: stories260K
// behind an Engine (or no model at all: the server stays "loading"), on a free port.
#pragma once

#include <httplib.h>

#include <nlohmann/json.hpp>

#include <memory>
#include <thread>

#include "common/shared_data.h"
#include "engine/engine.h"
#include "model/weights.h"
#include "server/server.h"
#include "tokenizer/tokenizer.h"

namespace hearth::test {

class ServingFixture {
 public:
  // `with_model`: load stories260K (the caller has checked it exists) and turn ready.
  ServingFixture(server::ServerOptions o, bool with_model) {
    o.port = 0;
    o.host = "127.0.0.1";
    server_ = std::make_unique<server::Server>(o);
    port_ = server_->bind();
    thread_ = std::thread([this] { server_->run(); });
    if (!with_model) return;
    model_ = Model::load(shared_path("models/stories260K.gguf"));
    tok_ = std::make_unique<Tokenizer>(Tokenizer::from_gguf(model_->file()));
    pool_ = std::make_unique<ops::ThreadPool>(2);
    EngineOptions eo;
    eo.max_running = 4;
    eo.max_queued = 16;
    eo.max_seq_tokens = 512;
    engine_ = std::make_unique<Engine>(*model_, *tok_, eo, *pool_);
    engine_->start();
    server::ModelInfo info;
    info.id = "stories260K";
    info.aliases = {"stories260K.gguf"};
    info.n_ctx = 512;
    server_->set_backend(*tok_, *engine_, info);
  }
  ~ServingFixture() {
    server_->shutdown();
    thread_.join();
    if (engine_) engine_->stop();
  }
  ServingFixture(const ServingFixture&) = delete;
  ServingFixture& operator=(const ServingFixture&) = delete;

  int port() const { return port_; }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(60, 0);
    return c;
  }
  const Tokenizer& tokenizer() const { return *tok_; }

 private:
  std::unique_ptr<server::Server> server_;
  std::thread thread_;
  int port_ = 0;
  std::unique_ptr<Model> model_;
  std::unique_ptr<Tokenizer> tok_;
  std::unique_ptr<ops::ThreadPool> pool_;
  std::unique_ptr<Engine> engine_;
};

}  // namespace hearth::test
