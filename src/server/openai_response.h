// Building the JSON replies: OpenAI chat/completions objects and stream chunks, llama-server's
// /completion objects, usage and llama-server-style timings.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/request.h"
#include "tokenizer/tokenizer.h"

namespace hearth::server {

// Serializes with invalid UTF-8 replaced (token pieces may split characters).
std::string dump_json(const nlohmann::json& j);

struct ResponseMeta {
  std::string id;  // chatcmpl-... / cmpl-...
  int64_t created = 0;
  std::string model;
};

// One generated token with its logprobs, for the logprobs blocks.
struct TokenRecord {
  int32_t token = -1;
  float logprob = 0.0f;
  std::vector<TokenLogprob> top;
};

// "stop" | "length" (context full counts as length) | "cancelled" | "error".
const char* openai_finish_reason(FinishReason r);

nlohmann::json usage_json(const RequestStats& s);
nlohmann::json timings_json(const RequestStats& s);

nlohmann::json chat_logprobs_json(const std::vector<TokenRecord>& tokens, const Tokenizer& tok);
nlohmann::json completion_logprobs_json(const std::vector<TokenRecord>& tokens,
                                        const Tokenizer& tok, size_t text_offset);

nlohmann::json chat_completion_json(const ResponseMeta& m, const std::string& content,
                                    const std::string& reasoning, FinishReason reason,
                                    const RequestStats& stats, nlohmann::json logprobs);
nlohmann::json chat_chunk_json(const ResponseMeta& m, nlohmann::json delta,
                               nlohmann::json finish_reason, nlohmann::json logprobs,
                               bool with_usage_field);
nlohmann::json usage_chunk_json(const ResponseMeta& m, const char* object,
                                const RequestStats& stats);

nlohmann::json completion_json(const ResponseMeta& m, const std::string& text, FinishReason reason,
                               const RequestStats& stats, nlohmann::json logprobs);
nlohmann::json completion_chunk_json(const ResponseMeta& m, const std::string& text,
                                     nlohmann::json finish_reason, nlohmann::json logprobs,
                                     bool with_usage_field);

// llama-server's POST /completion reply (and its final stream object when stop is true).
struct LlamaCompletionInfo {
  std::string model;
  std::string content;
  bool stop = true;
  FinishReason reason = FinishReason::Stop;
  bool stopped_word = false;
  std::string stopping_word;
  RequestStats stats;
  int32_t id_slot = 0;
  nlohmann::json probs;                        // completion_probabilities, null when not asked
  std::optional<std::vector<int32_t>> tokens;  // generated ids (return_tokens), none when not asked
};
nlohmann::json llama_completion_json(const LlamaCompletionInfo& info);
nlohmann::json llama_probs_json(const std::vector<TokenRecord>& tokens, const Tokenizer& tok);

}  // namespace hearth::server
