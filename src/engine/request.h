// What a caller submits to the engine and the events it gets back.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "sampling/grammar.h"
#include "sampling/params.h"
#include "tokenizer/text_prompt.h"

namespace hearth {

// ContextFull: the sequence reached the context (max_seq_tokens). PoolFull: it was alone and the
// KV pool still could not hold its next token (a pool smaller than the context). GrammarFailed:
// the request's grammar allowed no token of the vocabulary. Error: anything else.
enum class FinishReason { Stop, Length, Cancelled, ContextFull, PoolFull, GrammarFailed, Error };
const char* finish_reason_name(FinishReason r);

struct RequestStats {
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;     // prompt tokens whose K/V came from the prefix cache
  int64_t prefilled_tokens = 0;  // prompt tokens computed (not cached), recomputation included
  int64_t generated_tokens = 0;
  int64_t preemptions = 0;
  int64_t draft_tokens = 0;    // speculative decoding: tokens drafted and verified
  int64_t draft_accepted = 0;  // and those of them the sampler chose (engine/speculation.h)
  double queue_ms = 0;         // submit -> first scheduled
  double ttft_ms = 0;          // submit -> first generated token
  double decode_ms = 0;        // first -> last generated token
};

struct TokenLogprob {
  int32_t token = -1;
  float logprob = 0.0f;
};

struct EngineEvent {
  enum class Kind { Token, Finished } kind = Kind::Token;
  int64_t request_id = 0;
  int32_t token = -1;    // Token: the generated id
  std::string text;      // Token: UTF-8 safe to show now (complete characters, no partial stop
                         // string; held-back text comes with a later event). Finished: the text
                         // held back to the end, if any (no token carries it)
  float logprob = 0.0f;  // Token, when n_probs > 0
  std::vector<TokenLogprob> top_logprobs;    // Token, when n_probs > 0: best first
  FinishReason reason = FinishReason::Stop;  // Finished
  std::string error;                         // Finished with Error
  RequestStats stats;                        // Finished
};

struct GenerationRequest {
  std::vector<int32_t> prompt;  // token ids (already templated and tokenized), or
  TextPrompt prompt_text;       // used when `prompt` is empty
  // The sampler chain (sampling/params.h; llama-server's names and defaults). When absent, a
  // plain one is built from the three fields below: softmax(logits / temperature), greedy at 0.
  std::optional<SamplerParams> sampling;
  float temperature = 0.0f;
  uint64_t seed = 0;
  int64_t max_tokens = 128;  // with context_limit, < 0: the rest of the context
  // The caller's context rule, checked as soon as the prompt is tokenized (0: none): the prompt
  // plus `context_reserve` tokens must fit in `context_limit`, or submit refuses with
  // SubmitResult::context_exceeded and the prompt's token count (before anything is queued).
  int64_t context_limit = 0;
  int64_t context_reserve = 1;
  bool stop_at_eog = true;        // end on the vocabulary's end-of-generation tokens
  std::vector<std::string> stop;  // stop strings (matched across token boundaries; not emitted)
  int32_t n_probs = 0;  // (without `sampling`) report the chosen token's logprob and the top n
  // Constrained decoding: when set, every generated token continues a match of this grammar and
  // the reply ends only where the grammar may (sampling/grammar_constraint.h).
  std::shared_ptr<const Grammar> grammar;
  // A lazy grammar (tool_choice "auto"): when not empty, the reply is free until this text
  // appears in it; from its first byte on, the reply must match `grammar`. (If the token that
  // completes the trigger also carries text the grammar refuses, the grammar is dropped and
  // the reply stays free.)
  std::string grammar_trigger;
  // Control tokens in the reply come out as their text (tool-call formats whose markers are
  // control tokens: [TOOL_CALLS], <|channel|>, ...); end-of-generation tokens never do.
  bool render_special = false;
  // Background work (next-turn warming): the prompt is only computed into the prefix cache, and
  // only while the engine has nothing else to do: at most one step at a time, set aside at the
  // next step boundary when a real request arrives (what it computed stays cached), dropped
  // when the pool has no free blocks for it (it never evicts cached work). No tokens are
  // generated; the Finished event says Length, or Cancelled when it was dropped.
  bool warm = false;
  // Called on the engine's thread; must not block for long.
  std::function<void(const EngineEvent&)> on_event;
  // Tests and evaluation: the logits row each generated token is sampled from.
  std::function<void(std::span<const float>)> on_logits;
};

}  // namespace hearth
