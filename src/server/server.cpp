#include "server/server.h"

#include <fmt/format.h>

#include <sys/socket.h>

#include <cstdio>
#include <ctime>

#include "server/auth.h"
#include "server/openai_response.h"
#include "server/server_impl.h"
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
  ApiError e(503, "Loading model", "unavailable_error", "", "model_loading");
  e.retry_after_s = retry_after_s;
  return e;
}

// Every handler's exceptions become error replies here: nothing crosses into httplib.
template <typename F>
httplib::Server::Handler guarded(Server::Impl* s, F f) {
  return [s, f](const httplib::Request& req, httplib::Response& res) {
    try {
      f(req, res);
    } catch (const ApiError& e) {
      send_error(res, e);
    } catch (const Error& e) {  // validation below the server (sampler, template, tokenizer)
      send_error(res, ApiError(400, e.what()));
    } catch (const std::exception& e) {
      send_error(res, ApiError(500, fmt::format("internal error: {}", e.what()), "server_error"));
    }
    if (res.status >= 400) s->metrics.record_http_error(res.status);
  };
}

}  // namespace

void Server::Impl::require_ready() const {
  if (draining.load()) {
    ApiError e(503, "the server is shutting down", "unavailable_error", "", "shutting_down");
    e.retry_after_s = opt.retry_after_s;
    throw e;
  }
  if (!ready.load()) throw loading_error(opt.retry_after_s);
}

void Server::Impl::check_model(const std::string& name) const {
  if (name.empty() || name == model.id) return;
  for (const std::string& a : model.aliases)
    if (name == a) return;
  throw ApiError(
      404, fmt::format("The model '{}' does not exist (this server serves '{}')", name, model.id),
      "invalid_request_error", "model", "model_not_found");
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

void Server::Impl::setup_routes() {
  http.set_payload_max_length(opt.max_body_bytes);
  http.set_keep_alive_timeout(opt.keep_alive_s);
  http.set_read_timeout(opt.io_timeout_s);
  http.set_write_timeout(opt.io_timeout_s);
  http.set_socket_options([this](int fd) {
    httplib::default_socket_options(fd);  // SO_REUSEADDR
    listen_fd = fd;
  });
  const int threads = std::max(4, opt.http_threads);
  http.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };

  http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (opt.cors) {
      res.set_header("Access-Control-Allow-Origin", opt.cors_origin);
      res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type");
      res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
      if (req.method == "OPTIONS") {
        res.status = 204;
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    if (req.path == "/health" || opt.api_key.empty())
      return httplib::Server::HandlerResponse::Unhandled;
    if (!authorized(opt.api_key, req.get_header_value("Authorization"))) {
      res.set_header("WWW-Authenticate", "Bearer");
      send_error(res, ApiError(401, "Invalid or missing API key (send 'Authorization: Bearer KEY')",
                               "authentication_error", "", "invalid_api_key"));
      metrics.record_http_error(401);
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });

  // httplib's own errors (413 oversize, 404 unknown route, 400 bad HTTP) get a JSON body too.
  http.set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req,
                                                                     httplib::Response& res) {
    if (!res.body.empty() || res.content_length_ > 0)
      return httplib::Server::HandlerResponse::Unhandled;
    ApiError e(res.status, "request failed");
    if (res.status == 404) {
      e = ApiError(404, fmt::format("no route {} {}", req.method, req.path),
                   "invalid_request_error", "", "not_found");
    } else if (res.status == 413) {
      e = ApiError(413, fmt::format("the request body is larger than {} bytes", opt.max_body_bytes),
                   "invalid_request_error", "", "request_too_large");
    } else if (res.status == 405) {
      e = ApiError(405, fmt::format("method {} is not allowed on {}", req.method, req.path),
                   "invalid_request_error", "", "method_not_allowed");
    } else if (res.status >= 500) {
      e.type = "server_error";
    }
    send_error(res, e);
    metrics.record_http_error(res.status);
    return httplib::Server::HandlerResponse::Handled;
  }));

  http.Get("/health", guarded(this, [this](const httplib::Request&, httplib::Response& res) {
             require_ready();
             send_json(res, {{"status", "ok"}});
           }));

  auto models = guarded(this, [this](const httplib::Request&, httplib::Response& res) {
    require_ready();
    json m = {{"id", model.id},
              {"object", "model"},
              {"created", model.created},
              {"owned_by", "hearth"},
              {"meta", {{"n_ctx", model.n_ctx}, {"n_vocab", tok->n_vocab()}}}};
    send_json(res, {{"object", "list"}, {"data", json::array({m})}});
  });
  http.Get("/v1/models", models);
  http.Get("/models", models);

  http.Post("/tokenize", guarded(this, [this](const httplib::Request& req, httplib::Response& res) {
              require_ready();
              json b = parse_json_body(req.body);
              auto c = b.find("content");
              if (c == b.end() || !c->is_string())
                bad_param("content", "'content' must be a string", "invalid_type");
              bool add_special = false, with_pieces = false;
              if (auto it = b.find("add_special"); it != b.end() && !it->is_null()) {
                if (!it->is_boolean())
                  bad_param("add_special", "'add_special' must be a boolean", "invalid_type");
                add_special = it->get<bool>();
              }
              if (auto it = b.find("with_pieces"); it != b.end() && !it->is_null()) {
                if (!it->is_boolean())
                  bad_param("with_pieces", "'with_pieces' must be a boolean", "invalid_type");
                with_pieces = it->get<bool>();
              }
              auto ids = tok->encode(c->get<std::string>(), add_special, true);
              json tokens = json::array();
              for (int32_t id : ids) {
                if (with_pieces)
                  tokens.push_back({{"id", id}, {"piece", tok->token_to_piece(id)}});
                else
                  tokens.push_back(id);
              }
              send_json(res, {{"tokens", tokens}});
            }));

  http.Post("/detokenize",
            guarded(this, [this](const httplib::Request& req, httplib::Response& res) {
              require_ready();
              json b = parse_json_body(req.body);
              auto t = b.find("tokens");
              if (t == b.end() || !t->is_array())
                bad_param("tokens", "'tokens' must be an array of token ids", "invalid_type");
              std::vector<int32_t> ids;
              for (size_t i = 0; i < t->size(); ++i) {
                const json& v = (*t)[i];
                if (!v.is_number_integer() || v.get<int64_t>() < 0 ||
                    v.get<int64_t>() >= static_cast<int64_t>(tok->n_vocab()))
                  bad_param(fmt::format("tokens[{}]", i),
                            fmt::format("tokens[{}] is not a token id of this vocabulary", i));
                ids.push_back(static_cast<int32_t>(v.get<int64_t>()));
              }
              send_json(res, {{"content", tok->decode(ids)}});
            }));

  http.Get("/metrics", guarded(this, [this](const httplib::Request&, httplib::Response& res) {
             MetricsGauges g;
             if (ready.load()) g.engine = engine->metrics();
             {
               std::lock_guard lock(active_mu);
               g.http_requests_active = static_cast<int64_t>(active.size());
             }
             res.set_content(metrics.render(g), "text/plain; version=0.0.4; charset=utf-8");
           }));

  http.Get(
      "/slots", guarded(this, [this](const httplib::Request&, httplib::Response& res) {
        require_ready();
        json slots = json::array();
        const auto now = std::chrono::steady_clock::now();
        std::lock_guard lock(active_mu);
        for (const auto& [number, a] : active)
          slots.push_back({{"id", number},
                           {"id_task", a->engine_id},
                           {"route", a->route},
                           {"is_processing", true},
                           {"stream", a->stream},
                           {"n_ctx", model.n_ctx},
                           {"n_prompt_tokens", a->prompt_tokens},
                           {"n_decoded", a->generated.load()},
                           {"elapsed_ms",
                            std::chrono::duration<double, std::milli>(now - a->started).count()}});
        send_json(res, slots);
      }));

  add_generation_routes();
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
    if (p <= 0) fail("cannot bind {} on any port", s.opt.host);
    s.opt.port = p;
  } else if (!s.http.bind_to_port(s.opt.host, s.opt.port)) {
    fail("cannot bind {}:{} (in use, or not an address of this machine)", s.opt.host, s.opt.port);
  }
  // cpp-httplib 0.11 listens with a backlog of 5: bursts of connections overflow it and some
  // clients see resets. Calling listen() again on the socket raises the backlog.
  if (s.listen_fd >= 0) ::listen(s.listen_fd, 1024);
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
  s.http.stop();
}

}  // namespace hearth::server
