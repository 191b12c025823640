// The small routes: GET /health, /v1/models, /metrics, /slots and /props; POST /tokenize and
// /detokenize (llama-server's).
#include <fmt/format.h>

#include "server/metrics_gauges.h"
#include "server/props.h"
#include "server/server_impl.h"
#include "server/webui_assets.h"

namespace hearth::server {

using nlohmann::json;

namespace {

// An optional boolean field of a request body (null counts as absent).
bool optional_bool(const json& body, const char* name) {
  auto it = body.find(name);
  if (it == body.end() || it->is_null()) return false;
  if (!it->is_boolean())
    bad_param(name, fmt::format("'{}' must be a boolean", name), "invalid_type");
  return it->get<bool>();
}

// The body's `name` field, which `ok` must accept (else 400 invalid_type with `message`).
template <typename Check>
const json& required_field(const json& body, const char* name, Check ok, const char* message) {
  auto it = body.find(name);
  if (it == body.end() || !ok(*it)) bad_param(name, message, "invalid_type");
  return *it;
}

}  // namespace

void Server::Impl::handle_health(const httplib::Request&, httplib::Response& res) {
  require_ready();
  send_json(res, {{"status", "ok"}});
}

void Server::Impl::handle_models(const httplib::Request&, httplib::Response& res) {
  require_ready();
  json m = {{"id", model.id},
            {"object", "model"},
            {"created", model.created},
            {"owned_by", "hearth"},
            {"meta", {{"n_ctx", model.n_ctx}, {"n_vocab", tok->n_vocab()}}}};
  send_json(res, {{"object", "list"}, {"data", json::array({m})}});
}

void Server::Impl::handle_tokenize(const httplib::Request& req, httplib::Response& res) {
  require_ready();
  const json b = parse_json_body(req.body);
  const json& content = required_field(
      b, "content", [](const json& v) { return v.is_string(); }, "'content' must be a string");
  const bool add_special = optional_bool(b, "add_special");
  const bool with_pieces = optional_bool(b, "with_pieces");
  auto ids = tok->encode(content.get<std::string>(), add_special, true);
  json tokens = json::array();
  for (int32_t id : ids) {
    if (with_pieces)
      tokens.push_back({{"id", id}, {"piece", tok->token_to_piece(id)}});
    else
      tokens.push_back(id);
  }
  send_json(res, {{"tokens", tokens}});
}

void Server::Impl::handle_detokenize(const httplib::Request& req, httplib::Response& res) {
  require_ready();
  const json b = parse_json_body(req.body);
  const json& tokens = required_field(
      b, "tokens", [](const json& v) { return v.is_array(); },
      "'tokens' must be an array of token ids");
  std::vector<int32_t> ids;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const json& v = tokens[i];
    if (!v.is_number_integer() || v.get<int64_t>() < 0 ||
        v.get<int64_t>() >= static_cast<int64_t>(tok->n_vocab()))
      bad_param(fmt::format("tokens[{}]", i),
                fmt::format("tokens[{}] is not a token id of this vocabulary", i));
    ids.push_back(static_cast<int32_t>(v.get<int64_t>()));
  }
  send_json(res, {{"content", tok->decode(ids)}});
}

void Server::Impl::handle_metrics(const httplib::Request&, httplib::Response& res) {
  MetricsGauges g;
  if (ready.load()) g.engine = engine->metrics();
  {
    std::lock_guard lock(active_mu);
    g.http_requests_active = static_cast<int64_t>(active.size());
  }
  res.set_content(metrics.render(g), "text/plain; version=0.0.4; charset=utf-8");
}

void Server::Impl::handle_slots(const httplib::Request&, httplib::Response& res) {
  require_ready();
  json slots = json::array();
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(active_mu);
  for (const auto& [number, a] : active)
    slots.push_back(
        {{"id", number},
         {"id_task", a->engine_id},
         {"route", a->route},
         {"is_processing", true},
         {"stream", a->stream},
         {"n_ctx", model.n_ctx},
         {"n_prompt_tokens", a->prompt_tokens},
         {"n_decoded", a->generated.load()},
         {"elapsed_ms", std::chrono::duration<double, std::milli>(now - a->started).count()}});
  send_json(res, slots);
}

void Server::Impl::handle_props(const httplib::Request&, httplib::Response& res) {
  require_ready();
  // What every request's sampler fields are read over (request_sampler_defaults, request.h).
  const PropsInput in{model, formatter->chat_template().source(), engine->max_running(),
                      request_sampler_defaults(), opt.webui && !webui_assets().empty()};
  send_json(res, props_json(in));
}

}  // namespace hearth::server
