// The pieces every reply shares: JSON serialization, the reply's identity (ResponseMeta), token
// records for logprobs, OpenAI's finish reasons, usage and llama-server-style timings. The
// replies themselves are written by the responders (server/responder.h).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/request.h"

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

}  // namespace hearth::server
