// What a caller submits to the engine and the events it gets back.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace hearth {

enum class FinishReason { Stop, Length, Cancelled, ContextFull, Error };
const char* finish_reason_name(FinishReason r);

struct RequestStats {
  int64_t prompt_tokens = 0;
  int64_t prefilled_tokens = 0;  // tokens computed for this request (recomputation included)
  int64_t generated_tokens = 0;
  int64_t preemptions = 0;
  double queue_ms = 0;   // submit -> first scheduled
  double ttft_ms = 0;    // submit -> first generated token
  double decode_ms = 0;  // first -> last generated token
};

struct EngineEvent {
  enum class Kind { Token, Finished } kind = Kind::Token;
  int64_t request_id = 0;
  int32_t token = -1;  // Token: the generated id
  std::string text;    // Token: the complete UTF-8 this token adds (may be empty)
  FinishReason reason = FinishReason::Stop;  // Finished
  std::string error;                         // Finished with Error
  RequestStats stats;                        // Finished
};

struct GenerationRequest {
  std::vector<int32_t> prompt;  // token ids (already templated and tokenized)
  float temperature = 0.0f;     // 0 = greedy
  uint64_t seed = 0;
  int64_t max_tokens = 128;
  bool stop_at_eog = true;  // end on the vocabulary's end-of-generation tokens
  // Called on the engine's thread; must not block for long.
  std::function<void(const EngineEvent&)> on_event;
};

}  // namespace hearth
