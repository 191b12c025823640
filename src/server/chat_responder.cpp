// POST /v1/chat/completions: "chat.completion" replies and "chat.completion.chunk" stream chunks
// (the role first, content deltas, the finish reason last), with reasoning_content split off
// when the request asked for reasoning_format "deepseek", and tool_calls read from the reply
// when the request has tools (the reasoning is split off first, so a call inside a reasoning
// block stays reasoning).
#include "server/responder.h"

namespace hearth::server {

using nlohmann::json;

namespace {

json bytes_of(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(static_cast<int>(c));
  return b;
}

// {"content": [{token, logprob, bytes, top_logprobs}, ...]}
json chat_logprobs_json(const std::vector<TokenRecord>& tokens, const Tokenizer& tok) {
  json content = json::array();
  for (const TokenRecord& t : tokens) {
    const std::string piece = tok.token_to_piece(t.token);
    json top = json::array();
    for (const TokenLogprob& alt : t.top) {
      const std::string p = tok.token_to_piece(alt.token);
      top.push_back({{"token", p}, {"logprob", alt.logprob}, {"bytes", bytes_of(p)}});
    }
    content.push_back({{"token", piece},
                       {"logprob", t.logprob},
                       {"bytes", bytes_of(piece)},
                       {"top_logprobs", top}});
  }
  return {{"content", content}};
}

// What a piece of the reply says: reasoning, content and the calls completed in it.
struct Parts {
  std::string reasoning;
  std::string content;
  std::vector<chat::ToolCall> calls;
};

// A delta's reasoning and content, each only when there is some.
json split_delta(const Parts& parts) {
  json delta = json::object();
  if (!parts.reasoning.empty()) delta["reasoning_content"] = parts.reasoning;
  if (!parts.content.empty()) delta["content"] = parts.content;
  return delta;
}

bool blank(std::string_view s) {
  return s.find_first_not_of(" \t\r\n") == std::string_view::npos;
}

class ChatResponder : public OpenAiResponder {
 public:
  ChatResponder(ReplySettings settings, chat::ReplyStream reply,
                std::unique_ptr<ToolCallReader> tools)
      : OpenAiResponder(std::move(settings),
                        {"chat.completion", "chat.completion.chunk", "message", "delta"}),
        reply_(std::move(reply)),
        tools_(std::move(tools)) {}

  std::vector<json> start() override {
    return {chunk({{"role", "assistant"}, {"content", ""}}, nullptr, nullptr)};
  }

  std::vector<json> delta(const Delta& d) override {
    if (!reply_.splits() && !tools_) {
      said_.content += d.text;
      return {chunk({{"content", d.text}}, nullptr, logprobs(d))};
    }
    const Parts p = read(reply_.push(d.text), false);
    std::vector<json> out;
    json delta = split_delta(p);
    if (!delta.empty() || s_.per_token)
      out.push_back(chunk(std::move(delta), nullptr, logprobs(d)));
    add_call_chunks(p.calls, out);
    return out;
  }

  std::vector<json> finish(const Outcome& o) override {
    std::vector<json> out;
    const Parts p = read(reply_.finish(), true);
    json rest = split_delta(p);
    if (!rest.empty()) out.push_back(chunk(std::move(rest), nullptr, nullptr));
    add_call_chunks(p.calls, out);
    for (json& j : finish_with(json::object(), o, finish_reason(o))) out.push_back(std::move(j));
    return out;
  }

  json whole(const Delta& all, const Outcome& o) override {
    const Parts p = read(reply_.whole(all.text), true);
    json message = {{"role", "assistant"}, {"content", p.content}};
    if (!p.reasoning.empty()) message["reasoning_content"] = p.reasoning;
    if (!p.calls.empty()) {
      message["tool_calls"] = tools_->message_entries(p.calls);
      if (blank(p.content)) message["content"] = nullptr;  // OpenAI: null beside calls
    }
    return reply(std::move(message), o, logprobs(all), finish_reason(o));
  }

  nlohmann::ordered_json reply_message() const override {
    nlohmann::ordered_json m = {{"role", "assistant"}, {"content", said_.content}};
    if (!said_.reasoning.empty()) m["reasoning_content"] = said_.reasoning;
    if (said_.calls.empty()) return m;
    if (blank(said_.content)) m["content"] = nullptr;
    nlohmann::ordered_json calls = nlohmann::ordered_json::array();
    for (const chat::ToolCall& c : said_.calls)
      calls.push_back({{"id", c.id},
                       {"type", "function"},
                       {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
    m["tool_calls"] = std::move(calls);
    return m;
  }

 private:
  json logprobs(const Delta& d) const {
    return s_.per_token ? chat_logprobs_json(trimmed(d.records), *s_.tok) : json();
  }

  // The reasoning split's output through the tool-call parser (when there is one).
  // Everything read is also kept (reply_message).
  Parts read(const chat::ReasoningDelta& r, bool last) {
    Parts p{r.reasoning, r.content, {}};
    if (tools_) {
      chat::ToolDelta t = tools_->push(r.content);
      if (last) t.append(tools_->finish());
      p = {r.reasoning + t.reasoning, std::move(t.content), std::move(t.calls)};
    }
    said_.reasoning += p.reasoning;
    said_.content += p.content;
    said_.calls.insert(said_.calls.end(), p.calls.begin(), p.calls.end());
    return p;
  }

  void add_call_chunks(const std::vector<chat::ToolCall>& calls, std::vector<json>& out) {
    if (calls.empty()) return;
    for (json& v : tools_->stream_deltas(calls))
      out.push_back(chunk({{"tool_calls", std::move(v)}}, nullptr, nullptr));
  }

  // "tool_calls" when the reply ended after making calls, as OpenAI says.
  const char* finish_reason(const Outcome& o) const {
    return tools_ && tools_->calls() > 0 && o.reason == FinishReason::Stop ? "tool_calls" : nullptr;
  }

  chat::ReplyStream reply_;                // the reasoning split, when asked for
  std::unique_ptr<ToolCallReader> tools_;  // the tool calls, when the request has tools
  Parts said_;                             // the whole reply so far
};

}  // namespace

std::unique_ptr<Responder> make_chat_responder(ReplySettings settings, chat::ReplyStream reply,
                                               std::unique_ptr<ToolCallReader> tools) {
  return std::make_unique<ChatResponder>(std::move(settings), std::move(reply), std::move(tools));
}

}  // namespace hearth::server
