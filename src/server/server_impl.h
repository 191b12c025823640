// The server's shared state, seen by the route files (server.cpp: setup, the route table and
// the request checks every route shares; utility_routes.cpp: the small routes;
// completion_routes.cpp: the generation routes; webui.cpp: the web chat page). Not part of the
// public API.
#pragma once

#include <httplib.h>

#include <atomic>
#include <map>
#include <mutex>
#include <string>

#include "chat/chat_formatter.h"
#include "chat/tool_calls.h"
#include "engine/engine.h"
#include "server/api_error.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "server/request.h"
#include "server/server.h"
#include "tokenizer/tokenizer.h"

namespace hearth::server {

class Responder;
struct Outcome;
struct BuiltPrompt;

// Sends an ApiError as OpenAI's error JSON (with Retry-After when set).
void send_error(httplib::Response& res, const ApiError& e);
void send_json(httplib::Response& res, const nlohmann::json& j, int status = 200);

// A generation being served (for /slots and shutdown).
struct ActiveRequest {
  int64_t engine_id = -1;
  std::string route;
  bool stream = false;
  int64_t prompt_tokens = 0;
  std::atomic<int64_t> generated{0};
  std::chrono::steady_clock::time_point started;
};

struct Server::Impl {
  explicit Impl(ServerOptions o);

  ServerOptions opt;
  HttpServer http;
  Metrics metrics;

  // Set once by set_backend, read by handlers after `ready` is seen true.
  const Tokenizer* tok = nullptr;
  Engine* engine = nullptr;
  ModelInfo model;
  std::unique_ptr<chat::ChatFormatter> formatter;
  chat::ToolFormat tool_format = chat::ToolFormat::Hermes;  // of the model's replies
  VocabAccess vocab;
  std::atomic<bool> ready{false};
  std::atomic<bool> draining{false};

  std::mutex active_mu;
  std::condition_variable active_cv;
  std::map<int64_t, std::shared_ptr<ActiveRequest>> active;  // by server request number
  int64_t next_request = 1;
  std::atomic<int64_t> next_response_id{1};

  void setup_routes();
  void add_generation_routes();
  // httplib's timeouts and worker pool, from `opt`.
  void configure_http();
  // Before any route: CORS headers, refusals from the headers alone, the API key.
  httplib::Server::HandlerResponse pre_route(const httplib::Request& req, httplib::Response& res);
  // A GET of the web chat page, which needs no API key.
  bool is_open_page(const httplib::Request& req) const;
  // A status httplib set itself gets an error body (httplib_error).
  httplib::Server::HandlerResponse on_http_error(const httplib::Request& req,
                                                 httplib::Response& res);

  // A route handler of this server, with its exceptions turned into error replies (guard).
  using RouteHandler = void (Impl::*)(const httplib::Request&, httplib::Response&);
  httplib::Server::Handler guarded(RouteHandler handler);
  void handle_health(const httplib::Request& req, httplib::Response& res);
  void handle_models(const httplib::Request& req, httplib::Response& res);
  void handle_tokenize(const httplib::Request& req, httplib::Response& res);
  void handle_detokenize(const httplib::Request& req, httplib::Response& res);
  void handle_metrics(const httplib::Request& req, httplib::Response& res);
  void handle_slots(const httplib::Request& req, httplib::Response& res);
  void handle_props(const httplib::Request& req, httplib::Response& res);

  // The web chat page (webui.cpp): GET /, /index.html, /assets/...
  void add_webui_routes();
  void handle_webui(const httplib::Request& req, httplib::Response& res);

  // Throws ApiError 503 while loading or shutting down.
  void require_ready() const;
  // The served model a request's "model" names (model_names.h); throws 404 model_not_found.
  const ModelInfo& check_model(const std::string& name) const;
  // Exceptions become error replies here: nothing crosses into httplib. `param` names what a
  // hearth::Error from the layers below concerns.
  template <typename F>
  void guard(httplib::Response& res, const std::string& param, F&& f) {
    try {
      f();
    } catch (...) {
      send_error(res, to_api_error(std::current_exception(), param));
    }
    if (res.status >= 400) metrics.record_http_error(res.status);
  }

  // The error reply for a status httplib set itself (unknown route, unreadable request).
  ApiError httplib_error(const httplib::Request& req, int status) const;

  // The generation routes (completion_routes.cpp): the request, then the reply through the
  // API's responder, whole or streamed.
  struct Submitted;
  void handle_generation(Api api, const httplib::Request& req, httplib::Response& res);
  // Hands the prompt to the engine; throws 503 server_busy or 400 when it refuses.
  Submitted submit(Api api, const ParsedRequest& pr, const BuiltPrompt& bp);
  void reply_whole(Responder& responder, const Submitted& g, httplib::Response& res);
  void reply_streamed(std::unique_ptr<Responder> responder, Submitted g, httplib::Response& res);
  // The stream's body, written on the connection's thread; `finished` turns true once the
  // generation has ended. False: the client is gone.
  bool stream_events(Responder& responder, const Submitted& g, bool& finished,
                     httplib::DataSink& sink);
  // After a chat reply that ended well: the next turn's history, warmed (server/next_turn.h).
  void warm_next_turn(const Submitted& g, const Responder& responder, const Outcome& o);

  std::shared_ptr<ActiveRequest> register_active(const std::string& route, bool stream,
                                                 int64_t prompt_tokens, int64_t& number);
  void unregister_active(int64_t number);
};

}  // namespace hearth::server
