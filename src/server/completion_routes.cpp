// The generation routes: POST /v1/chat/completions, /v1/completions (OpenAI) and /completion
// (llama-server), streamed as Server-Sent Events or answered whole. What each API's reply looks
// like is its responder's business (server/responder.h); here: the request, the engine, and the
// delivery.
#include <fmt/format.h>

#include <ctime>

#include "server/client_watch.h"
#include "server/event_channel.h"
#include "server/next_turn.h"
#include "server/prompt_builder.h"
#include "server/responder.h"
#include "server/server_impl.h"
#include "server/sse.h"
#include "server/tool_use.h"
#include "util/error.h"

namespace hearth::server {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// A generation the engine accepted, as the reply paths see it.
struct Server::Impl::Submitted {
  std::shared_ptr<EventChannel> channel;
  std::shared_ptr<ActiveRequest> active;
  int64_t number = 0;  // the server's request number (for /slots)
  int64_t engine_id = -1;
  bool per_token = false;  // logprobs: one delta per token, coalescing off
  std::string remote_addr;
  int remote_port = 0;
  int local_port = 0;
  // A chat request whose next turn is warmed when its reply ends well (null: none).
  std::shared_ptr<const ParsedRequest> next_turn;
  std::string grammar_param;  // the field the request's grammar came from
};

namespace {

// Pumps one request's events: content deltas through the coalescer to `on_delta` (false: the
// client is gone — the generation is cancelled and the pump returns).
template <typename OnDelta>
Outcome pump(Engine& engine, const Server::Impl::Submitted& g, Coalescer& co,
             std::chrono::milliseconds watch_every, OnDelta&& on_delta) {
  Outcome out;
  const ClientWatch watch(g.remote_addr, g.remote_port, g.local_port);
  auto next_watch = Clock::now() + watch_every;
  Delta pending;
  auto send = [&](std::string text) {
    pending.text = std::move(text);
    if (!on_delta(pending)) {
      engine.cancel(g.engine_id);
      out.client_gone = true;
      out.reason = FinishReason::Cancelled;
      return false;
    }
    pending = Delta();
    return true;
  };
  for (;;) {
    if (watch.watching() && Clock::now() >= next_watch) {
      next_watch = Clock::now() + watch_every;
      if (watch.gone()) {
        engine.cancel(g.engine_id);
        out.client_gone = true;
        out.reason = FinishReason::Cancelled;
        return out;
      }
    }
    auto deadline = co.deadline().value_or(Clock::now() + std::chrono::seconds(1));
    if (watch.watching()) deadline = std::min(deadline, next_watch);
    std::optional<EngineEvent> e = g.channel->pop_until(deadline);
    if (!e) {
      if (auto text = co.poll(Clock::now()); text && !send(std::move(*text))) return out;
      continue;
    }
    if (e->kind == EngineEvent::Kind::Token) {
      g.active->generated.fetch_add(1);
      out.last_token = e->token;
      pending.ids.push_back(e->token);
      if (g.per_token) {
        pending.records.push_back({e->token, e->logprob, e->top_logprobs});
        if (!send(e->text)) return out;
      } else if (auto text = co.add(e->text, Clock::now()); text && !send(std::move(*text))) {
        return out;
      }
      continue;
    }
    // Finished: whatever is held goes out first (it may include held-back text).
    pending.text = co.flush() + e->text;
    if (!pending.empty() && !send(std::move(pending.text))) return out;
    out.reason = e->reason;
    out.stats = e->stats;
    out.error = e->error;
    return out;
  }
}

const char* route_name(Api api) {
  switch (api) {
    case Api::ChatCompletions:
      return "/v1/chat/completions";
    case Api::Completions:
      return "/v1/completions";
    case Api::LlamaCompletion:
      return "/completion";
  }
  return "";
}

// The parameter a refused prompt concerns.
const char* prompt_param(Api api) {
  return api == Api::ChatCompletions ? "messages" : "prompt";
}

ParsedRequest parse_request(Api api, const nlohmann::ordered_json& body, const VocabAccess& vocab) {
  return api == Api::ChatCompletions ? parse_chat_request(body, vocab)
         : api == Api::Completions   ? parse_completions_request(body, vocab)
                                     : parse_llama_completion_request(body, vocab);
}

bool ended_in_error(FinishReason r) {
  return r == FinishReason::PoolFull || r == FinishReason::GrammarFailed ||
         r == FinishReason::Error;
}

// The error a generation that could not finish its reply answers with (or streams as its last
// event). Only a fault of the server's own is a 5xx: a grammar the vocabulary cannot follow is
// the request's, and a KV pool too small for the conversation is the server's configured limit,
// answered as OpenAI answers a conversation past the context.
ApiError generation_error(const Outcome& o, const std::string& grammar_param) {
  switch (o.reason) {
    case FinishReason::GrammarFailed:
      return ApiError(400,
                      fmt::format("the reply could not follow the requested format after {} "
                                  "tokens: {}",
                                  o.stats.generated_tokens, o.error),
                      "invalid_request_error", grammar_param.empty() ? "grammar" : grammar_param,
                      "grammar_failed");
    case FinishReason::PoolFull:
      return ApiError(400,
                      fmt::format("the reply was cut after {} tokens: {}. Shorten the "
                                  "conversation or max_tokens, or start the server with a "
                                  "larger --kv-mem",
                                  o.stats.generated_tokens, o.error),
                      "invalid_request_error", "max_tokens", "context_length_exceeded");
    default:
      return ApiError(500, fmt::format("generation failed: {}", o.error), "server_error", "model",
                      "generation_failed");
  }
}

std::unique_ptr<Responder> make_responder(Api api, ReplySettings settings,
                                          std::optional<chat::ReasoningSplitter> reasoning,
                                          std::unique_ptr<ToolCallReader> tools) {
  switch (api) {
    case Api::ChatCompletions:
      return make_chat_responder(std::move(settings), chat::ReplyStream(std::move(reasoning)),
                                 std::move(tools));
    case Api::Completions:
      return make_completions_responder(std::move(settings));
    case Api::LlamaCompletion:
      break;
  }
  return make_llama_responder(std::move(settings));
}

}  // namespace

void Server::Impl::handle_generation(Api api, const httplib::Request& http_req,
                                     httplib::Response& res) {
  require_ready();
  ParsedRequest pr = parse_request(api, parse_json_body(http_req.body), vocab);
  const ModelInfo& served = check_model(pr.model);
  std::unique_ptr<ToolCallReader> tools;
  if (api == Api::ChatCompletions) tools = plan_tool_use(pr, tool_format);
  BuiltPrompt bp = build_prompt(pr, *tok, model.n_ctx, *formatter);

  Submitted g = submit(api, pr, bp);
  g.per_token = pr.logprobs;
  g.remote_addr = http_req.remote_addr;
  g.remote_port = http_req.remote_port;
  g.local_port = http_req.local_port;
  if (opt.warm && api == Api::ChatCompletions && !bp.from_tokens)
    g.next_turn = std::make_shared<const ParsedRequest>(pr);

  ReplySettings s;
  s.meta.id = fmt::format("{}-{}", api == Api::ChatCompletions ? "chatcmpl" : "cmpl",
                          next_response_id.fetch_add(1));
  s.meta.created = static_cast<int64_t>(std::time(nullptr));
  s.meta.model = served.id;  // the served model's id, whatever name the client sent
  s.tok = tok;
  s.per_token = pr.logprobs;
  s.top_logprobs = pr.top_logprobs;
  s.include_usage = pr.include_usage;
  s.return_tokens = pr.return_tokens;
  s.echo = pr.echo && !bp.from_tokens ? pr.prompt_text : std::string();
  s.stop = pr.stop;
  std::unique_ptr<Responder> responder =
      make_responder(api, std::move(s), std::move(bp.reasoning), std::move(tools));
  // A browser that aborts a kept-alive stream reads on (up to 16 KiB) before it closes the
  // socket, and the generation is cancelled only then: its streams end their connection.
  // Browsers say who they are (Fetch Metadata); API clients keep their connections.
  if (pr.stream && http_req.has_header("Sec-Fetch-Mode")) HttpServer::close_after_reply(res);
  if (pr.stream)
    reply_streamed(std::move(responder), std::move(g), res);
  else
    reply_whole(*responder, g, res);
}

Server::Impl::Submitted Server::Impl::submit(Api api, const ParsedRequest& pr,
                                             const BuiltPrompt& bp) {
  GenerationRequest req;
  if (bp.from_tokens)
    req.prompt = bp.tokens;
  else
    req.prompt_text = bp.text;
  // The engine tokenizes the prompt (once) and applies the context rule before anything runs.
  set_context_rule(req, pr.max_tokens, model.n_ctx);
  req.stop = pr.stop;
  req.stop_at_eog = !pr.ignore_eos;
  req.grammar = pr.grammar;
  req.grammar_trigger = pr.grammar_trigger;
  req.render_special = pr.render_special;
  req.sampling = pr.sampling;
  Submitted g;
  g.grammar_param = pr.grammar_param;
  g.channel = std::make_shared<EventChannel>();
  req.on_event = [channel = g.channel](const EngineEvent& e) { channel->push(e); };

  g.active = register_active(route_name(api), pr.stream, 0, g.number);
  SubmitResult sub = engine->submit(std::move(req));
  if (!sub.ok()) {
    unregister_active(g.number);
    if (sub.context_exceeded) check_context(sub.prompt_tokens, pr.max_tokens, model.n_ctx);
    if (sub.grammar_refused)
      throw ApiError(400,
                     fmt::format("{}: this model cannot generate text that it matches: {}",
                                 pr.grammar_param, sub.error),
                     "invalid_request_error", pr.grammar_param, "invalid_value");
    if (sub.busy) {
      ApiError e(503, fmt::format("the server is busy ({}); retry later", sub.error),
                 "server_error", "model", "server_busy");
      e.retry_after_s = opt.retry_after_s;
      throw e;
    }
    throw ApiError(400, sub.error, "invalid_request_error", prompt_param(api), "invalid_value");
  }
  g.engine_id = sub.id;
  {
    std::lock_guard lock(active_mu);
    g.active->prompt_tokens = sub.prompt_tokens;
    g.active->engine_id = sub.id;
  }
  return g;
}

void Server::Impl::reply_whole(Responder& responder, const Submitted& g, httplib::Response& res) {
  Coalescer co(opt.coalesce, false);
  Delta all;
  Outcome o = pump(*engine, g, co, opt.client_watch_interval, [&](const Delta& d) {
    all.append(d);
    return true;
  });
  unregister_active(g.number);
  metrics.record(o.stats, o.reason);
  if (o.client_gone) {  // nobody to answer; the connection is closed by httplib
    res.status = 499;
    return;
  }
  if (ended_in_error(o.reason)) throw generation_error(o, g.grammar_param);
  const json body = responder.whole(all, o);
  warm_next_turn(g, responder, o);  // before the client has the reply: its next turn is later
  send_json(res, body);
}

void Server::Impl::warm_next_turn(const Submitted& g, const Responder& responder,
                                  const Outcome& o) {
  if (!g.next_turn || o.client_gone ||
      (o.reason != FinishReason::Stop && o.reason != FinishReason::Length))
    return;
  try {  // best effort: nothing here may fail the reply it follows
    std::optional<TextPrompt> text =
        next_turn_prompt(*g.next_turn, responder.reply_message(), *formatter, *tok);
    if (!text) return;
    GenerationRequest req;
    req.prompt_text = std::move(*text);
    req.warm = true;
    req.context_limit = model.n_ctx;  // a history past the context is never sent: not warmed
    engine->submit(std::move(req));   // a refusal only means nothing is warmed
  } catch (...) {
  }
}

bool Server::Impl::stream_events(Responder& responder, const Submitted& g, bool& finished,
                                 httplib::DataSink& sink) {
  auto write = [&](const json& payload) {
    const std::string frame = sse_frame(payload);
    return sink.write(frame.data(), frame.size());
  };
  for (const json& payload : responder.start()) {
    if (!write(payload)) {
      engine->cancel(g.engine_id);
      return false;
    }
  }
  Coalescer co(opt.coalesce, !g.per_token);
  Outcome o = pump(*engine, g, co, opt.client_watch_interval, [&](const Delta& d) {
    for (const json& payload : responder.delta(d))
      if (!write(payload)) return false;
    return true;
  });
  finished = true;
  metrics.record(o.stats, o.reason);
  if (o.client_gone) return false;
  bool ok = true;
  if (ended_in_error(o.reason)) {
    ok = write(generation_error(o, g.grammar_param).to_json());
  } else {
    const std::vector<json> last = responder.finish(o);
    warm_next_turn(g, responder, o);  // before the client has the end: its next turn is later
    for (const json& payload : last)
      if (ok) ok = write(payload);
  }
  if (ok && responder.ends_with_done()) {
    const std::string done = sse_done();
    ok = sink.write(done.data(), done.size());
  }
  if (ok) sink.done();
  return ok;
}

void Server::Impl::reply_streamed(std::unique_ptr<Responder> responder, Submitted g,
                                  httplib::Response& res) {
  // The provider runs on this connection's thread after the handler returns, so everything it
  // needs is owned by the lambdas.
  struct StreamState {
    std::unique_ptr<Responder> responder;
    Submitted g;
    bool finished = false;
  };
  auto st = std::make_shared<StreamState>(StreamState{std::move(responder), std::move(g)});
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, st](size_t, httplib::DataSink& sink) {
        // The provider runs inside httplib's response writer, past the handler's guard: an
        // exception there would end the worker. Ending the stream cancels the generation.
        try {
          return stream_events(*st->responder, st->g, st->finished, sink);
        } catch (...) {
          return false;
        }
      },
      [this, st](bool) {
        if (!st->finished) engine->cancel(st->g.engine_id);
        unregister_active(st->g.number);
      });
}

void Server::Impl::add_generation_routes() {
  auto route = [this](Api api) {
    return [this, api](const httplib::Request& req, httplib::Response& res) {
      // A hearth::Error escaping here is a template or tokenizer refusing the prompt.
      guard(res, prompt_param(api), [&] { handle_generation(api, req, res); });
    };
  };
  http.Post("/v1/chat/completions", route(Api::ChatCompletions));
  http.Post("/chat/completions", route(Api::ChatCompletions));
  http.Post("/v1/completions", route(Api::Completions));
  http.Post("/completions", route(Api::Completions));
  http.Post("/completion", route(Api::LlamaCompletion));
}

}  // namespace hearth::server
