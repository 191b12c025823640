#include "server/server.h"

#include <fmt/format.h>

#include <cstdio>
#include <ctime>

#include "server/auth.h"
#include "server/elastic_pool.h"
#include "server/model_names.h"
#include "server/openai_response.h"
#include "server/server_impl.h"
#include "server/webui.h"
#include "util/error.h"
#include "util/log.h"

namespace hearth::server {

using nlohmann::json;

void send_json(httplib::Response& res, const json& j, int status) {
  res.status = status;
  res.set_content(dump_json(j), "application/json; charset=utf-8");
}

void send_error(httplib::Response& res, const ApiError& e) {
  if (e.retry_after_s > 0) res.set_header("Retry-After", std::to_string(e.retry_after_s));
  send_json(res, e.to_json(), e.status);
}

namespace {

ApiError loading_error(int retry_after_s) {
  ApiError e(503, "Loading model", "unavailable_error", "model", "model_loading");
  e.retry_after_s = retry_after_s;
  return e;
}

}  // namespace

void Server::Impl::require_ready() const {
  if (draining.load()) {
    ApiError e(503, "the server is shutting down", "unavailable_error", "model", "shutting_down");
    e.retry_after_s = opt.retry_after_s;
    throw e;
  }
  if (!ready.load()) throw loading_error(opt.retry_after_s);
}

const ModelInfo& Server::Impl::check_model(const std::string& name) const {
  return resolve_model(name, {&model});
}

std::shared_ptr<ActiveRequest> Server::Impl::register_active(const std::string& route, bool stream,
                                                             int64_t prompt_tokens,
                                                             int64_t& number) {
  auto a = std::make_shared<ActiveRequest>();
  a->route = route;
  a->stream = stream;
  a->prompt_tokens = prompt_tokens;
  a->started = std::chrono::steady_clock::now();
  std::lock_guard lock(active_mu);
  number = next_request++;
  active[number] = a;
  return a;
}

void Server::Impl::unregister_active(int64_t number) {
  {
    std::lock_guard lock(active_mu);
    active.erase(number);
  }
  active_cv.notify_all();
}

namespace {

ConnectionLimits limits_of(const ServerOptions& o) {
  ConnectionLimits l;
  l.read_timeout = o.read_timeout;
  l.keep_alive = std::chrono::seconds(o.keep_alive_s);
  l.write_timeout = std::chrono::seconds(o.write_timeout_s);
  l.max_body = o.max_body_bytes;
  return l;
}

}  // namespace

ApiError Server::Impl::httplib_error(const httplib::Request& req, int status) const {
  if (HttpServer::current_read_timed_out())
    return ApiError(408,
                    fmt::format("the request did not arrive within {} ms (--read-timeout)",
                                opt.read_timeout.count()),
                    "invalid_request_error", "body", "request_timeout");
  if (status == 413 || HttpServer::current_read_over_budget())
    return ApiError(413,
                    fmt::format("the request body is larger than {} bytes", opt.max_body_bytes),
                    "invalid_request_error", "body", "request_too_large");
  switch (status) {
    case 404:
      return ApiError(404, fmt::format("no route {} {}", req.method, req.path),
                      "invalid_request_error", "path", "not_found");
    case 405:
      return ApiError(405, fmt::format("method {} is not allowed on {}", req.method, req.path),
                      "invalid_request_error", "path", "method_not_allowed");
    case 400:
      return ApiError(400, "malformed HTTP request (or its body was cut short)",
                      "invalid_request_error", "body", "bad_request");
  }
  return ApiError(status, fmt::format("request failed (HTTP {})", status),
                  status >= 500 ? "server_error" : "invalid_request_error", "body",
                  status >= 500 ? "internal_error" : "bad_request");
}

namespace {

// --tool-format: a format by name, or "auto": the chat template's, hermes when it shows none
// (a model that was not taught a format can still be made to call tools by tool_choice, and
// hermes is the most widely trained one).
chat::ToolFormat resolve_tool_format(const std::string& name,
                                     const std::optional<std::string>& chat_template) {
  if (name != "auto") {
    if (auto f = chat::tool_format_from_name(name)) return *f;
    throw Error(
        fmt::format("unknown tool format '{}' (auto, {})", name, chat::tool_format_names()));
  }
  const chat::ToolFormat f = chat::detect_tool_format(chat_template.value_or(""));
  return f == chat::ToolFormat::None ? chat::ToolFormat::Hermes : f;
}

}  // namespace

Server::Impl::Impl(ServerOptions o) : opt(std::move(o)), http(limits_of(opt)) {}

void Server::Impl::configure_http() {
  // The timeouts httplib itself applies (SO_RCVTIMEO/SO_SNDTIMEO on accepted sockets, the
  // Keep-Alive header); ConnectionStream enforces the same limits on each connection.
  http.set_keep_alive_timeout(opt.keep_alive_s);
  http.set_keep_alive_max_count(ConnectionLimits{}.max_requests);
  http.set_read_timeout(std::chrono::duration_cast<std::chrono::microseconds>(opt.read_timeout));
  http.set_write_timeout(opt.write_timeout_s);
  const auto threads = static_cast<size_t>(std::max(4, opt.http_threads));
  http.new_task_queue = [threads] { return new ElasticPool(threads); };
}

// The web chat page is fetched without the API key: the page is what asks the user for it, and
// it holds nothing secret. Every API route it calls still needs the key.
bool Server::Impl::is_open_page(const httplib::Request& req) const {
  return opt.webui && (req.method == "GET" || req.method == "HEAD") && is_webui_path(req.path);
}

httplib::Server::HandlerResponse Server::Impl::pre_route(const httplib::Request& req,
                                                         httplib::Response& res) {
  if (opt.cors) {
    res.set_header("Access-Control-Allow-Origin", opt.cors_origin);
    res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type");
    res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
  }
  // Refused from its headers alone (bad Content-Length, too large): its body is never read.
  if (auto refusal = HttpServer::current_refusal()) {
    send_error(res, ApiError(refusal->status, refusal->message, "invalid_request_error",
                             refusal->param, refusal->code));
    metrics.record_http_error(refusal->status);
    return httplib::Server::HandlerResponse::Handled;
  }
  if (opt.cors && req.method == "OPTIONS") {
    res.status = 204;
    return httplib::Server::HandlerResponse::Handled;
  }
  if (req.path == "/health" || opt.api_key.empty() || is_open_page(req))
    return httplib::Server::HandlerResponse::Unhandled;
  if (!authorized(opt.api_key, req.get_header_value("Authorization"))) {
    res.set_header("WWW-Authenticate", "Bearer");
    send_error(res, ApiError(401, "Invalid or missing API key (send 'Authorization: Bearer KEY')",
                             "authentication_error", "Authorization", "invalid_api_key"));
    metrics.record_http_error(401);
    return httplib::Server::HandlerResponse::Handled;
  }
  return httplib::Server::HandlerResponse::Unhandled;
}

// httplib's own errors (404 unknown route, 400 bad HTTP, a body that did not arrive) get a JSON
// body too.
httplib::Server::HandlerResponse Server::Impl::on_http_error(const httplib::Request& req,
                                                             httplib::Response& res) {
  if (!res.body.empty() || res.content_length_ > 0)
    return httplib::Server::HandlerResponse::Unhandled;
  ApiError e = httplib_error(req, res.status);
  if (e.status == 408) res.set_header("Connection", "close");
  send_error(res, e);
  metrics.record_http_error(res.status);
  return httplib::Server::HandlerResponse::Handled;
}

httplib::Server::Handler Server::Impl::guarded(RouteHandler handler) {
  return [this, handler](const httplib::Request& req, httplib::Response& res) {
    guard(res, "body", [&] { (this->*handler)(req, res); });
  };
}

void Server::Impl::setup_routes() {
  configure_http();
  http.set_pre_routing_handler(
      [this](const httplib::Request& req, httplib::Response& res) { return pre_route(req, res); });
  http.set_error_handler(httplib::Server::HandlerWithResponse(
      [this](const httplib::Request& req, httplib::Response& res) {
        return on_http_error(req, res);
      }));

  http.Get("/health", guarded(&Impl::handle_health));
  http.Get("/v1/models", guarded(&Impl::handle_models));
  http.Get("/models", guarded(&Impl::handle_models));
  http.Post("/tokenize", guarded(&Impl::handle_tokenize));
  http.Post("/detokenize", guarded(&Impl::handle_detokenize));
  http.Get("/metrics", guarded(&Impl::handle_metrics));
  http.Get("/slots", guarded(&Impl::handle_slots));
  http.Get("/props", guarded(&Impl::handle_props));
  add_generation_routes();
  if (opt.webui) add_webui_routes();
}

Server::Server(ServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {
  impl_->setup_routes();
}

Server::~Server() {
  shutdown();
}

int Server::bind() {
  Impl& s = *impl_;
  if (s.opt.port == 0) {
    const int p = s.http.bind_to_any_port(s.opt.host);
    if (p <= 0)
      fail("cannot bind {} on any port: {}", s.opt.host, HttpServer::bind_failure(s.opt.host, 0));
    s.opt.port = p;
  } else if (!s.http.bind_to_port(s.opt.host, s.opt.port)) {
    fail("cannot listen on {}:{}: {}", s.opt.host, s.opt.port,
         HttpServer::bind_failure(s.opt.host, s.opt.port));
  }
  s.http.raise_backlog(1024);
  return s.opt.port;
}

void Server::run() {
  impl_->http.listen_after_bind();
}

int Server::port() const {
  return impl_->opt.port;
}

void Server::set_backend(const Tokenizer& tok, Engine& engine, ModelInfo info) {
  const std::string bos = tok.bos() >= 0 ? tok.token_to_piece(tok.bos(), true) : "";
  const std::string eos = tok.eos() >= 0 ? tok.token_to_piece(tok.eos(), true) : "";
  impl_->formatter = std::make_unique<chat::ChatFormatter>(info.chat_template, bos, eos);
  if (impl_->formatter->uses_fallback())
    std::fprintf(stderr, "hearth: %s\n", impl_->formatter->warning().c_str());
  impl_->tool_format = resolve_tool_format(impl_->opt.tool_format, info.chat_template);
  impl_->vocab = {static_cast<int32_t>(tok.n_vocab()),
                  [&tok](int32_t id) { return tok.token_to_piece(id, true); },
                  [&tok](std::string_view text) { return tok.encode(text, false, false); }};
  impl_->tok = &tok;
  impl_->engine = &engine;
  impl_->model = std::move(info);
  if (impl_->model.created == 0) impl_->model.created = static_cast<int64_t>(std::time(nullptr));
  impl_->ready.store(true);
}

void Server::shutdown(std::chrono::milliseconds grace) {
  Impl& s = *impl_;
  s.draining.store(true);
  {
    std::unique_lock lock(s.active_mu);
    s.active_cv.wait_for(lock, grace, [&] { return s.active.empty(); });
    if (s.engine)
      for (const auto& [number, a] : s.active)
        if (a->engine_id >= 0) s.engine->cancel(a->engine_id);
    // Cancelled generations end within a step; their handlers then return.
    s.active_cv.wait_for(lock, std::chrono::seconds(30), [&] { return s.active.empty(); });
  }
  // Not http.stop(): it does nothing until run() has begun listening, and run() may be about to.
  s.http.close_listener();
}

}  // namespace hearth::server
