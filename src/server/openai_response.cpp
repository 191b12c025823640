#include "server/openai_response.h"

namespace hearth::server {

using nlohmann::json;

std::string dump_json(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

const char* openai_finish_reason(FinishReason r) {
  switch (r) {
    case FinishReason::Stop:
      return "stop";
    case FinishReason::Length:
    case FinishReason::ContextFull:
      return "length";
    case FinishReason::Cancelled:
      return "cancelled";
    case FinishReason::Error:
      return "error";
  }
  return "stop";
}

json usage_json(const RequestStats& s) {
  return {{"prompt_tokens", s.prompt_tokens},
          {"completion_tokens", s.generated_tokens},
          {"total_tokens", s.prompt_tokens + s.generated_tokens},
          {"prompt_tokens_details", {{"cached_tokens", s.cached_tokens}}}};
}

json timings_json(const RequestStats& s) {
  const double prompt_ms = std::max(0.0, s.ttft_ms - s.queue_ms);
  const int64_t prompt_n = s.prompt_tokens - s.cached_tokens;
  const int64_t pred_n = s.generated_tokens;
  auto per_tok = [](double ms, int64_t n) { return n > 0 ? ms / static_cast<double>(n) : 0.0; };
  auto per_sec = [](double ms, int64_t n) {
    return ms > 0 ? 1000.0 * static_cast<double>(n) / ms : 0.0;
  };
  return {{"cache_n", s.cached_tokens},
          {"prompt_n", prompt_n},
          {"prompt_ms", prompt_ms},
          {"prompt_per_token_ms", per_tok(prompt_ms, prompt_n)},
          {"prompt_per_second", per_sec(prompt_ms, prompt_n)},
          {"predicted_n", pred_n},
          {"predicted_ms", s.decode_ms},
          {"predicted_per_token_ms", per_tok(s.decode_ms, pred_n > 1 ? pred_n - 1 : 0)},
          {"predicted_per_second", per_sec(s.decode_ms, pred_n > 1 ? pred_n - 1 : 0)},
          {"queue_ms", s.queue_ms}};
}

namespace {
json bytes_of(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(static_cast<int>(c));
  return b;
}
}  // namespace

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

json chat_completion_json(const ResponseMeta& m, const std::string& content,
                          const std::string& reasoning, FinishReason reason,
                          const RequestStats& stats, json logprobs) {
  json message = {{"role", "assistant"}, {"content", content}};
  if (!reasoning.empty()) message["reasoning_content"] = reasoning;
  return {{"id", m.id},
          {"object", "chat.completion"},
          {"created", m.created},
          {"model", m.model},
          {"system_fingerprint", "hearth"},
          {"choices", json::array({{{"index", 0},
                                    {"message", message},
                                    {"logprobs", std::move(logprobs)},
                                    {"finish_reason", openai_finish_reason(reason)}}})},
          {"usage", usage_json(stats)},
          {"timings", timings_json(stats)}};
}

json chat_chunk_json(const ResponseMeta& m, json delta, json finish_reason, json logprobs,
                     bool with_usage_field) {
  json j = {{"id", m.id},
            {"object", "chat.completion.chunk"},
            {"created", m.created},
            {"model", m.model},
            {"system_fingerprint", "hearth"},
            {"choices", json::array({{{"index", 0},
                                      {"delta", std::move(delta)},
                                      {"logprobs", std::move(logprobs)},
                                      {"finish_reason", std::move(finish_reason)}}})}};
  if (with_usage_field) j["usage"] = nullptr;
  return j;
}

json usage_chunk_json(const ResponseMeta& m, const char* object, const RequestStats& stats) {
  return {{"id", m.id},
          {"object", object},
          {"created", m.created},
          {"model", m.model},
          {"system_fingerprint", "hearth"},
          {"choices", json::array()},
          {"usage", usage_json(stats)},
          {"timings", timings_json(stats)}};
}

json completion_json(const ResponseMeta& m, const std::string& text, FinishReason reason,
                     const RequestStats& stats, json logprobs) {
  return {{"id", m.id},
          {"object", "text_completion"},
          {"created", m.created},
          {"model", m.model},
          {"system_fingerprint", "hearth"},
          {"choices", json::array({{{"index", 0},
                                    {"text", text},
                                    {"logprobs", std::move(logprobs)},
                                    {"finish_reason", openai_finish_reason(reason)}}})},
          {"usage", usage_json(stats)},
          {"timings", timings_json(stats)}};
}

json completion_chunk_json(const ResponseMeta& m, const std::string& text, json finish_reason,
                           json logprobs, bool with_usage_field) {
  json j = {{"id", m.id},
            {"object", "text_completion"},
            {"created", m.created},
            {"model", m.model},
            {"system_fingerprint", "hearth"},
            {"choices", json::array({{{"index", 0},
                                      {"text", text},
                                      {"logprobs", std::move(logprobs)},
                                      {"finish_reason", std::move(finish_reason)}}})}};
  if (with_usage_field) j["usage"] = nullptr;
  return j;
}

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

}  // namespace hearth::server
