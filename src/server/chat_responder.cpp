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
  ChatResponder(ReplySettings settings, std::optional<chat::ReasoningSplitter> reasoning)
      : OpenAiResponder(std::move(settings),
                        {"chat.completion", "chat.completion.chunk", "message", "delta"}),
        splitter_(std::move(reasoning)) {}

  std::vector<json> start() override {
    return {chunk({{"role", "assistant"}, {"content", ""}}, nullptr, nullptr)};
  }

  std::optional<json> delta(const Delta& d) override {
    json delta = {{"content", d.text}};
    if (splitter_) {
      delta = split_delta(splitter_->push(d.text));
      if (delta.empty() && !s_.per_token) return std::nullopt;  // a tag is still undecided
    }
    return chunk(std::move(delta), nullptr, logprobs(d));
  }

  std::vector<json> finish(const Outcome& o) override {
    std::vector<json> out;
    if (splitter_) {
      json rest = split_delta(splitter_->finish());
      if (!rest.empty()) out.push_back(chunk(std::move(rest), nullptr, nullptr));
    }
    for (json& j : finish_with(json::object(), o)) out.push_back(std::move(j));
    return out;
  }

  json whole(const Delta& all, const Outcome& o) override {
    std::string content = all.text;
    std::string reasoning;
    if (splitter_) {
      chat::ReasoningDelta a = splitter_->push(all.text);
      chat::ReasoningDelta b = splitter_->finish();
      reasoning = a.reasoning + b.reasoning;
      content = a.content + b.content;
    }
    json message = {{"role", "assistant"}, {"content", content}};
    if (!reasoning.empty()) message["reasoning_content"] = reasoning;
    return reply(std::move(message), o, logprobs(all));
  }

 private:
  json logprobs(const Delta& d) const {
    return s_.per_token ? chat_logprobs_json(trimmed(d.records), *s_.tok) : json();
  }

  std::optional<chat::ReasoningSplitter> splitter_;
};

}  // namespace

std::unique_ptr<Responder> make_chat_responder(ReplySettings settings,
                                               std::optional<chat::ReasoningSplitter> reasoning) {
  return std::make_unique<ChatResponder>(std::move(settings), std::move(reasoning));
}

}  // namespace hearth::server
