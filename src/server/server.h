// The HTTP server: OpenAI's /v1/chat/completions, /v1/completions, /v1/models and
// llama-server's /completion, /tokenize, /detokenize, /health, /metrics, /slots, /props over one
// Engine, and the web chat page at /.
//
// Lifecycle: construct, bind() (the port answers /health with 503 "loading" at once), run() on
// a thread, set_backend() once the model is loaded (/health turns ok), shutdown() to stop
// accepting, cancel what is in flight after a grace period, and make run() return.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/coalescer.h"

namespace hearth {
class Engine;
class Tokenizer;
}  // namespace hearth

namespace hearth::server {

struct ServerOptions {
  std::string host = "127.0.0.1";  // loopback unless asked
  int port = 8080;                 // 0: any free port (see bind())
  std::string api_key;             // empty: no auth
  bool cors = false;               // Access-Control-Allow-* headers and preflight replies
  std::string cors_origin = "*";
  size_t max_body_bytes = 8u << 20;  // larger bodies get 413
  // Most connections served at once (keep-alive holds one each); threads start as needed.
  int http_threads = 512;
  int keep_alive_s = 5;  // idle wait for a connection's next request
  // A request's headers and body must arrive within this (else 408 and the connection closes).
  // Replies are not bounded by it: a stream may last minutes.
  std::chrono::milliseconds read_timeout{5000};
  int write_timeout_s = 600;  // longest a single write may wait for the client to read
  CoalesceOptions coalesce;   // streamed content batching
  int retry_after_s = 1;      // Retry-After on 503 busy/loading
  // How often a client owed no bytes yet (prefill, a reply sent whole) is checked for having
  // left; a check is one non-blocking peek on its socket.
  std::chrono::milliseconds client_watch_interval{20};
  // How replies write tool calls (chat/tool_calls.h: hermes, llama3, ...): "auto" reads it from
  // the chat template, and a template with no known format gets hermes.
  std::string tool_format = "auto";
  // Next-turn warming (server/next_turn.h): after a chat reply, compute the history the next
  // request will start with into the prefix cache as background work.
  bool warm = true;
  // The web chat page at / (server/webui.h), when the binary was built with it.
  bool webui = true;
};

struct ModelInfo {
  std::string id;                            // the name /v1/models lists
  std::string path;                          // the file served (for /props)
  std::vector<std::string> aliases;          // other names accepted in "model" (file name, path)
  int64_t n_ctx = 0;                         // context per sequence (prompt + reply)
  int64_t created = 0;                       // unix time for /v1/models
  std::optional<std::string> chat_template;  // tokenizer.chat_template (none: ChatML)
};

class Server {
 public:
  explicit Server(ServerOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds host:port; returns the bound port. Throws hearth::Error when it cannot.
  int bind();
  // Serves until shutdown(); returns after in-flight handlers are done.
  void run();
  // The model is ready: generation routes work and /health says ok. `tok` and `engine` must
  // outlive the server (or shutdown()); the engine must be started. Throws when the chat
  // template does not parse.
  void set_backend(const Tokenizer& tok, Engine& engine, ModelInfo info);
  // Stops accepting (new requests get 503), lets in-flight generations finish for `grace`,
  // cancels the rest, then stops the listener. Safe from any thread, idempotent.
  void shutdown(std::chrono::milliseconds grace = std::chrono::milliseconds(0));

  int port() const;

  struct Impl;  // opaque (server_impl.h)

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace hearth::server
