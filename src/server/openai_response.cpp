#include "server/openai_response.h"

#include <algorithm>

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
    case FinishReason::PoolFull:
    case FinishReason::GrammarFailed:
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
          {"draft_n", s.draft_tokens},
          {"draft_n_accepted", s.draft_accepted},
          {"queue_ms", s.queue_ms}};
}

}  // namespace hearth::server
