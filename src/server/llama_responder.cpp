// llama-server's POST /completion: {content, id_slot, stop, ...} objects, the last (stop: true)
// with the model, token counts, how the generation stopped and timings. Its streams end without
// [DONE].
#include "server/responder.h"

namespace hearth::server {

using nlohmann::json;

namespace {

// One /completion object; `stop` false: a stream's delta, without the end's fields.
struct LlamaCompletionInfo {
  std::string model;
  std::string content;
  bool stop = true;
  FinishReason reason = FinishReason::Stop;
  bool stopped_word = false;
  std::string stopping_word;
  RequestStats stats;
  int32_t id_slot = 0;
  json probs;                                  // completion_probabilities, null when not asked
  std::optional<std::vector<int32_t>> tokens;  // generated ids (return_tokens), none when not asked
};

json llama_completion_json(const LlamaCompletionInfo& i) {
  json j = {{"content", i.content}, {"id_slot", i.id_slot}, {"stop", i.stop}};
  if (!i.probs.is_null()) j["completion_probabilities"] = i.probs;
  if (i.tokens) j["tokens"] = *i.tokens;
  if (!i.stop) return j;
  j["model"] = i.model;
  j["tokens_predicted"] = i.stats.generated_tokens;
  j["tokens_evaluated"] = i.stats.prompt_tokens;
  j["tokens_cached"] = i.stats.cached_tokens;
  j["truncated"] = false;
  j["stopped_eos"] = i.reason == FinishReason::Stop && !i.stopped_word;
  j["stopped_word"] = i.stopped_word;
  j["stopped_limit"] = i.reason == FinishReason::Length || i.reason == FinishReason::ContextFull;
  j["stopping_word"] = i.stopping_word;
  j["stop_type"] = i.stopped_word                     ? "word"
                   : (i.reason == FinishReason::Stop) ? "eos"
                   : (i.reason == FinishReason::Length || i.reason == FinishReason::ContextFull)
                       ? "limit"
                       : "none";
  j["timings"] = timings_json(i.stats);
  return j;
}

json llama_probs_json(const std::vector<TokenRecord>& tokens, const Tokenizer& tok) {
  json out = json::array();
  for (const TokenRecord& t : tokens) {
    json top = json::array();
    for (const TokenLogprob& alt : t.top)
      top.push_back(
          {{"id", alt.token}, {"token", tok.token_to_piece(alt.token)}, {"logprob", alt.logprob}});
    out.push_back({{"id", t.token},
                   {"token", tok.token_to_piece(t.token)},
                   {"logprob", t.logprob},
                   {"top_logprobs", top}});
  }
  return out;
}

class LlamaResponder : public Responder {
 public:
  using Responder::Responder;

  std::vector<json> delta(const Delta& d) override {
    LlamaCompletionInfo info;
    info.content = d.text;
    info.stop = false;
    add_tokens(info, d);
    return {llama_completion_json(info)};
  }

  std::vector<json> finish(const Outcome& o) override {
    LlamaCompletionInfo info = end(o);
    if (s_.return_tokens) info.tokens = std::vector<int32_t>();  // all went with the deltas
    return {llama_completion_json(info)};
  }

  bool ends_with_done() const override { return false; }

  json whole(const Delta& all, const Outcome& o) override {
    LlamaCompletionInfo info = end(o);
    info.content = all.text;
    add_tokens(info, all);
    return llama_completion_json(info);
  }

 private:
  void add_tokens(LlamaCompletionInfo& info, const Delta& d) const {
    if (s_.per_token) info.probs = llama_probs_json(trimmed(d.records), *s_.tok);
    if (s_.return_tokens) info.tokens = d.ids;
  }

  // The end's fields. The engine reports "stop" for both an end-of-generation token and a stop
  // string; the last token tells them apart. Which string matched is known only when there is
  // one.
  LlamaCompletionInfo end(const Outcome& o) const {
    LlamaCompletionInfo info;
    info.model = s_.meta.model;
    info.reason = o.reason;
    info.stats = o.stats;
    info.stopped_word = o.reason == FinishReason::Stop && !s_.stop.empty() &&
                        !(o.last_token >= 0 && s_.tok->is_eog(o.last_token));
    if (info.stopped_word && s_.stop.size() == 1) info.stopping_word = s_.stop[0];
    return info;
  }
};

}  // namespace

std::unique_ptr<Responder> make_llama_responder(ReplySettings settings) {
  return std::make_unique<LlamaResponder>(std::move(settings));
}

}  // namespace hearth::server
