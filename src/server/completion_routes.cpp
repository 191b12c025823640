// The generation routes: POST /v1/chat/completions, /v1/completions (OpenAI) and /completion
// (llama-server), streamed as Server-Sent Events or answered whole.
#include <fmt/format.h>

#include <ctime>

#include "server/client_watch.h"
#include "server/event_channel.h"
#include "server/openai_response.h"
#include "server/prompt_builder.h"
#include "server/server_impl.h"
#include "server/sse.h"
#include "util/error.h"

namespace hearth::server {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

struct Outcome {
  FinishReason reason = FinishReason::Stop;
  RequestStats stats;
  std::string error;
  bool client_gone = false;
  int32_t last_token = -1;
};

// Pumps one request's events: content deltas through the coalescer to `on_delta` (false: the
// client is gone — the generation is cancelled and the pump returns), each with the ids of the
// tokens generated since the previous delta (their text may be held back by the coalescer or a
// pending stop string, so a delta's ids and text need not match one to one).
template <typename OnDelta>
Outcome pump(EventChannel& ch, Engine& engine, int64_t engine_id, ActiveRequest& active,
             Coalescer& co, bool per_token, const ClientWatch& watch,
             std::chrono::milliseconds watch_every, OnDelta&& on_delta) {
  Outcome out;
  auto next_watch = Clock::now() + watch_every;
  std::vector<TokenRecord> records;
  std::vector<int32_t> ids;
  auto send = [&](std::string text) {
    if (!on_delta(text, records, ids)) {
      engine.cancel(engine_id);
      out.client_gone = true;
      out.reason = FinishReason::Cancelled;
      return false;
    }
    records.clear();
    ids.clear();
    return true;
  };
  for (;;) {
    if (watch.watching() && Clock::now() >= next_watch) {
      next_watch = Clock::now() + watch_every;
      if (watch.gone()) {
        engine.cancel(engine_id);
        out.client_gone = true;
        out.reason = FinishReason::Cancelled;
        return out;
      }
    }
    auto deadline = co.deadline().value_or(Clock::now() + std::chrono::seconds(1));
    if (watch.watching()) deadline = std::min(deadline, next_watch);
    std::optional<EngineEvent> e = ch.pop_until(deadline);
    if (!e) {
      if (auto text = co.poll(Clock::now()); text && !send(std::move(*text))) return out;
      continue;
    }
    if (e->kind == EngineEvent::Kind::Token) {
      active.generated.fetch_add(1);
      out.last_token = e->token;
      ids.push_back(e->token);
      if (per_token) {
        records.push_back({e->token, e->logprob, e->top_logprobs});
        if (!send(e->text)) return out;
      } else if (auto text = co.add(e->text, Clock::now()); text && !send(std::move(*text))) {
        return out;
      }
      continue;
    }
    // Finished: whatever is held goes out first (it may include held-back text).
    std::string rest = co.flush() + e->text;
    if ((!rest.empty() || !records.empty() || !ids.empty()) && !send(std::move(rest))) return out;
    out.reason = e->reason;
    out.stats = e->stats;
    out.error = e->error;
    return out;
  }
}

// The engine reports "stop" for both an end-of-generation token and a stop string; the last
// token tells them apart. Which string matched is known only when there is one.
void fill_stop_info(LlamaCompletionInfo& info, const Outcome& o, const Tokenizer& tok,
                    const std::vector<std::string>& stop) {
  info.stopped_word = o.reason == FinishReason::Stop && !stop.empty() &&
                      !(o.last_token >= 0 && tok.is_eog(o.last_token));
  if (info.stopped_word && stop.size() == 1) info.stopping_word = stop[0];
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

json trimmed_top(const std::vector<TokenRecord>& in, int32_t n, std::vector<TokenRecord>& out) {
  out = in;
  for (TokenRecord& r : out)
    if (static_cast<int32_t>(r.top.size()) > n) r.top.resize(static_cast<size_t>(n));
  return nullptr;
}

}  // namespace

void Server::Impl::handle_generation(Api api, const httplib::Request& http_req,
                                     httplib::Response& res) {
  require_ready();
  const json body = parse_json_body(http_req.body);
  ParsedRequest pr = api == Api::ChatCompletions ? parse_chat_request(body)
                     : api == Api::Completions   ? parse_completions_request(body)
                                                 : parse_llama_completion_request(body);
  const ModelInfo& served = check_model(pr.model);
  if (api == Api::ChatCompletions) {
    // Templates see objects in the order the client wrote them (tojson of tools, arguments).
    const auto ordered = nlohmann::ordered_json::parse(http_req.body);
    pr.messages_json = ordered["messages"];
    if (auto t = ordered.find("tools"); t != ordered.end()) pr.tools = *t;
    if (auto k = ordered.find("chat_template_kwargs"); k != ordered.end())
      pr.chat_template_kwargs = *k;
  }
  BuiltPrompt bp = build_prompt(pr, *tok, model.n_ctx, formatter.get());
  const int64_t prompt_n = static_cast<int64_t>(bp.tokens.size());

  GenerationRequest g;
  if (bp.from_tokens)
    g.prompt = bp.tokens;
  else
    g.prompt_text = bp.text;
  g.max_tokens = pr.max_tokens.value_or(model.n_ctx - prompt_n);
  g.stop = pr.stop;
  g.stop_at_eog = !pr.ignore_eos;
  apply_sampling(body, pr, vocab, g);
  auto channel = std::make_shared<EventChannel>();
  g.on_event = [channel](const EngineEvent& e) { channel->push(e); };

  int64_t number = 0;
  auto active = register_active(route_name(api), pr.stream, prompt_n, number);
  SubmitResult sub = engine->submit(std::move(g));
  if (!sub.ok()) {
    unregister_active(number);
    if (sub.error.rfind("busy", 0) == 0) {
      ApiError e(503, fmt::format("the server is busy ({}); retry later", sub.error),
                 "server_error", "model", "server_busy");
      e.retry_after_s = opt.retry_after_s;
      throw e;
    }
    throw ApiError(400, sub.error, "invalid_request_error",
                   api == Api::ChatCompletions ? "messages" : "prompt", "invalid_value");
  }
  active->engine_id = sub.id;

  ResponseMeta meta;
  meta.id = fmt::format("{}-{}", api == Api::ChatCompletions ? "chatcmpl" : "cmpl",
                        next_response_id.fetch_add(1));
  meta.created = static_cast<int64_t>(std::time(nullptr));
  meta.model = served.id;  // the served model's id, whatever name the client sent
  const bool per_token = pr.logprobs;
  const std::string echo = pr.echo && !bp.from_tokens ? pr.prompt_text : std::string();

  if (!pr.stream) {
    const ClientWatch watch(http_req.remote_addr, http_req.remote_port, http_req.local_port);
    Coalescer co(opt.coalesce, false);
    std::string text;
    std::vector<TokenRecord> records;
    std::vector<int32_t> ids;
    Outcome o =
        pump(*channel, *engine, sub.id, *active, co, per_token, watch, opt.client_watch_interval,
             [&](const std::string& t, const std::vector<TokenRecord>& r,
                 const std::vector<int32_t>& i) {
               text += t;
               records.insert(records.end(), r.begin(), r.end());
               ids.insert(ids.end(), i.begin(), i.end());
               return true;
             });
    unregister_active(number);
    metrics.record(o.stats, o.reason);
    if (o.client_gone) {  // nobody to answer; the connection is closed by httplib
      res.status = 499;
      return;
    }
    if (o.reason == FinishReason::Error)
      throw ApiError(500, fmt::format("generation failed: {}", o.error), "server_error", "model",
                     "generation_failed");
    std::vector<TokenRecord> trimmed;
    trimmed_top(records, pr.top_logprobs, trimmed);
    switch (api) {
      case Api::ChatCompletions: {
        std::string reasoning;
        if (bp.reasoning) {
          chat::ReasoningDelta a = bp.reasoning->push(text);
          chat::ReasoningDelta b = bp.reasoning->finish();
          reasoning = a.reasoning + b.reasoning;
          text = a.content + b.content;
        }
        send_json(res,
                  chat_completion_json(meta, text, reasoning, o.reason, o.stats,
                                       per_token ? chat_logprobs_json(trimmed, *tok) : json()));
        break;
      }
      case Api::Completions:
        send_json(res,
                  completion_json(
                      meta, echo + text, o.reason, o.stats,
                      per_token ? completion_logprobs_json(trimmed, *tok, echo.size()) : json()));
        break;
      case Api::LlamaCompletion: {
        LlamaCompletionInfo info;
        info.model = served.id;
        info.content = text;
        info.reason = o.reason;
        info.stats = o.stats;
        fill_stop_info(info, o, *tok, pr.stop);
        if (per_token) info.probs = llama_probs_json(trimmed, *tok);
        if (pr.return_tokens) info.tokens = ids;
        send_json(res, llama_completion_json(info));
        break;
      }
    }
    return;
  }

  // Streaming: the provider runs on this connection's thread after the handler returns, so
  // everything it needs is owned by the lambdas.
  struct StreamState {
    std::shared_ptr<EventChannel> channel;
    std::shared_ptr<ActiveRequest> active;
    int64_t number = 0;
    bool finished = false;
  };
  auto st = std::make_shared<StreamState>();
  st->channel = channel;
  st->active = active;
  st->number = number;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  const bool include_usage = pr.include_usage;
  const int32_t top_n = pr.top_logprobs;
  const bool return_tokens = pr.return_tokens;
  auto splitter = bp.reasoning ? std::make_shared<chat::ReasoningSplitter>(*bp.reasoning)
                               : std::shared_ptr<chat::ReasoningSplitter>();
  const int64_t engine_id = sub.id;
  auto provider = [this, st, api, meta, per_token, include_usage, top_n, return_tokens, echo,
                   engine_id, splitter, stop = pr.stop, remote_addr = http_req.remote_addr,
                   remote_port = http_req.remote_port,
                   local_port = http_req.local_port](size_t, httplib::DataSink& sink) {
    auto write = [&](const std::string& frame) { return sink.write(frame.data(), frame.size()); };
    bool first = true;
    if (api == Api::ChatCompletions &&
        !write(sse_frame(chat_chunk_json(meta, {{"role", "assistant"}, {"content", ""}}, nullptr,
                                         nullptr, include_usage)))) {
      engine->cancel(engine_id);
      return false;
    }
    Coalescer co(opt.coalesce, !per_token);
    const ClientWatch watch(remote_addr, remote_port, local_port);
    Outcome o = pump(
        *st->channel, *engine, engine_id, *st->active, co, per_token, watch,
        opt.client_watch_interval,
        [&](const std::string& text, const std::vector<TokenRecord>& records,
            const std::vector<int32_t>& ids) {
          std::vector<TokenRecord> trimmed;
          trimmed_top(records, top_n, trimmed);
          json frame;
          switch (api) {
            case Api::ChatCompletions: {
              json delta = {{"content", text}};
              if (splitter) {
                auto parts = splitter->push(text);
                delta = json::object();
                if (!parts.reasoning.empty()) delta["reasoning_content"] = parts.reasoning;
                if (!parts.content.empty()) delta["content"] = parts.content;
                if (delta.empty() && !per_token) return true;  // a tag is still undecided
              }
              frame = chat_chunk_json(meta, std::move(delta), nullptr,
                                      per_token ? chat_logprobs_json(trimmed, *tok) : json(),
                                      include_usage);
              break;
            }
            case Api::Completions:
              frame = completion_chunk_json(
                  meta, (first ? echo : std::string()) + text, nullptr,
                  per_token ? completion_logprobs_json(trimmed, *tok, 0) : json(), include_usage);
              break;
            case Api::LlamaCompletion: {
              LlamaCompletionInfo info;
              info.content = text;
              info.stop = false;
              if (per_token) info.probs = llama_probs_json(trimmed, *tok);
              if (return_tokens) info.tokens = ids;
              frame = llama_completion_json(info);
              break;
            }
          }
          first = false;
          return write(sse_frame(frame));
        });
    st->finished = true;
    metrics.record(o.stats, o.reason);
    if (o.client_gone) return false;
    bool ok = true;
    if (o.reason == FinishReason::Error) {
      ok = write(sse_frame(ApiError(500, fmt::format("generation failed: {}", o.error),
                                    "server_error", "model", "generation_failed")
                               .to_json()));
    } else if (api == Api::ChatCompletions) {
      if (splitter) {
        chat::ReasoningDelta parts = splitter->finish();
        json delta = json::object();
        if (!parts.reasoning.empty()) delta["reasoning_content"] = parts.reasoning;
        if (!parts.content.empty()) delta["content"] = parts.content;
        if (!delta.empty())
          ok = write(
              sse_frame(chat_chunk_json(meta, std::move(delta), nullptr, nullptr, include_usage)));
      }
      if (ok)
        ok = write(sse_frame(chat_chunk_json(meta, json::object(), openai_finish_reason(o.reason),
                                             nullptr, include_usage)));
      if (ok && include_usage)
        ok = write(sse_frame(usage_chunk_json(meta, "chat.completion.chunk", o.stats)));
    } else if (api == Api::Completions) {
      ok = write(
          sse_frame(completion_chunk_json(meta, first ? echo : std::string(),
                                          openai_finish_reason(o.reason), nullptr, include_usage)));
      if (ok && include_usage)
        ok = write(sse_frame(usage_chunk_json(meta, "text_completion", o.stats)));
    } else {
      LlamaCompletionInfo info;
      info.model = meta.model;
      info.reason = o.reason;
      info.stats = o.stats;
      fill_stop_info(info, o, *tok, stop);
      if (return_tokens) info.tokens = std::vector<int32_t>();  // all went with the deltas
      ok = write(sse_frame(llama_completion_json(info)));
    }
    if (ok && api != Api::LlamaCompletion) ok = write(sse_done());
    if (ok) sink.done();
    return ok;
  };
  res.set_chunked_content_provider(
      "text/event-stream",
      [provider](size_t offset, httplib::DataSink& sink) {
        // The provider runs inside httplib's response writer, past the handler's guard: an
        // exception there would end the worker. Ending the stream cancels the generation.
        try {
          return provider(offset, sink);
        } catch (...) {
          return false;
        }
      },
      [this, st, engine_id](bool) {
        if (!st->finished) engine->cancel(engine_id);
        unregister_active(st->number);
      });
}

void Server::Impl::add_generation_routes() {
  auto route = [this](Api api) {
    return [this, api](const httplib::Request& req, httplib::Response& res) {
      // A hearth::Error escaping here is a template or tokenizer refusing the prompt.
      guard(res, api == Api::ChatCompletions ? "messages" : "prompt",
            [&] { handle_generation(api, req, res); });
    };
  };
  http.Post("/v1/chat/completions", route(Api::ChatCompletions));
  http.Post("/chat/completions", route(Api::ChatCompletions));
  http.Post("/v1/completions", route(Api::Completions));
  http.Post("/completions", route(Api::Completions));
  http.Post("/completion", route(Api::LlamaCompletion));
}

}  // namespace hearth::server
