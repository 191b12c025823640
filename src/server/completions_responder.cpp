// POST /v1/completions: "text_completion" replies and stream chunks, the prompt repeated first
// when the request asked for echo.
#include "server/responder.h"

namespace hearth::server {

using nlohmann::json;

namespace {

// The legacy logprobs block: parallel arrays, each token's offset in the reply text.
json completion_logprobs_json(const std::vector<TokenRecord>& tokens, const Tokenizer& tok,
                              size_t text_offset) {
  json toks = json::array(), lps = json::array(), tops = json::array(), offs = json::array();
  for (const TokenRecord& t : tokens) {
    const std::string piece = tok.token_to_piece(t.token);
    toks.push_back(piece);
    lps.push_back(t.logprob);
    json top = json::object();
    for (const TokenLogprob& alt : t.top) top[tok.token_to_piece(alt.token)] = alt.logprob;
    tops.push_back(top);
    offs.push_back(text_offset);
    text_offset += piece.size();
  }
  return {{"tokens", toks}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offs}};
}

class CompletionsResponder : public OpenAiResponder {
 public:
  explicit CompletionsResponder(ReplySettings settings)
      : OpenAiResponder(std::move(settings),
                        {"text_completion", "text_completion", "text", "text"}) {}

  std::vector<json> delta(const Delta& d) override {
    return {chunk(unsent_echo() + d.text, nullptr, logprobs(d, 0))};
  }

  std::vector<json> finish(const Outcome& o) override { return finish_with(unsent_echo(), o); }

  json whole(const Delta& all, const Outcome& o) override {
    return reply(s_.echo + all.text, o, logprobs(all, s_.echo.size()));
  }

 private:
  // The echoed prompt goes with the first chunk (the finishing one when there was no delta).
  std::string unsent_echo() {
    if (echoed_) return std::string();
    echoed_ = true;
    return s_.echo;
  }
  // Streamed chunks count offsets from their own text (0), whole replies from the echo's end.
  json logprobs(const Delta& d, size_t text_offset) const {
    return s_.per_token ? completion_logprobs_json(trimmed(d.records), *s_.tok, text_offset)
                        : json();
  }

  bool echoed_ = false;
};

}  // namespace

std::unique_ptr<Responder> make_completions_responder(ReplySettings settings) {
  return std::make_unique<CompletionsResponder>(std::move(settings));
}

}  // namespace hearth::server
