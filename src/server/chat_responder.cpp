// POST /v1/chat/completions: "chat.completion" replies and "chat.completion.chunk" stream chunks
// (the role first, content deltas, the finish reason last), with reasoning_content split off
// when the request asked for reasoning_format "deepseek".
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

// A delta's reasoning and content, each only when there is some.
json split_delta(const chat::ReasoningDelta& parts) {
  json delta = json::object();
  if (!parts.reasoning.empty()) delta["reasoning_content"] = parts.reasoning;
  if (!parts.content.empty()) delta["content"] = parts.content;
  return delta;
}

class ChatResponder : public OpenAiResponder {
 public:
  ChatResponder(ReplySettings settings, chat::ReplyStream reply)
      : OpenAiResponder(std::move(settings),
                        {"chat.completion", "chat.completion.chunk", "message", "delta"}),
        reply_(std::move(reply)) {}

  std::vector<json> start() override {
    return {chunk({{"role", "assistant"}, {"content", ""}}, nullptr, nullptr)};
  }

  std::optional<json> delta(const Delta& d) override {
    if (!reply_.splits()) return chunk({{"content", d.text}}, nullptr, logprobs(d));
    json delta = split_delta(reply_.push(d.text));
    if (delta.empty() && !s_.per_token) return std::nullopt;  // a tag is still undecided
    return chunk(std::move(delta), nullptr, logprobs(d));
  }

  std::vector<json> finish(const Outcome& o) override {
    std::vector<json> out;
    json rest = split_delta(reply_.finish());
    if (!rest.empty()) out.push_back(chunk(std::move(rest), nullptr, nullptr));
    for (json& j : finish_with(json::object(), o)) out.push_back(std::move(j));
    return out;
  }

  json whole(const Delta& all, const Outcome& o) override {
    const chat::ReasoningDelta parts = reply_.whole(all.text);
    json message = {{"role", "assistant"}, {"content", parts.content}};
    if (!parts.reasoning.empty()) message["reasoning_content"] = parts.reasoning;
    return reply(std::move(message), o, logprobs(all));
  }

 private:
  json logprobs(const Delta& d) const {
    return s_.per_token ? chat_logprobs_json(trimmed(d.records), *s_.tok) : json();
  }

  chat::ReplyStream reply_;  // the reasoning split, when asked for
};

}  // namespace

std::unique_ptr<Responder> make_chat_responder(ReplySettings settings, chat::ReplyStream reply) {
  return std::make_unique<ChatResponder>(std::move(settings), std::move(reply));
}

}  // namespace hearth::server
