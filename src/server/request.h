// A generation request as the server understands it, whichever API it came through, and the
// parsers that validate OpenAI's and llama-server's JSON into it. Parsers throw ApiError
// (400, naming the parameter) for malformed input; they never touch the model.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/request.h"
#include "sampling/grammar.h"
#include "sampling/params.h"
#include "sampling/vocab_access.h"

namespace hearth::server {

enum class Api { ChatCompletions, Completions, LlamaCompletion };

// tool_choice: whether the reply may (auto), must (required, named) or must not (none) call one
// of the request's tools.
enum class ToolChoice { None, Auto, Required, Named };
struct ToolUse {
  ToolChoice choice = ToolChoice::None;  // None also when the request has no tools
  std::string name;                      // Named: the function
  bool parallel = true;                  // parallel_tool_calls: more than one call per reply
};

struct ChatMessage {
  std::string role;  // system, developer, user, assistant, tool
  std::string content;
  nlohmann::json extra;  // the message's other fields (tool_calls, name, ...), for templates
};

struct ParsedRequest {
  Api api = Api::ChatCompletions;
  std::string model;  // as the client named it (may be empty for llama-server routes)
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage

  // Chat
  std::vector<ChatMessage> messages;
  nlohmann::ordered_json messages_json;  // as sent, for the chat template
  bool add_generation_prompt = true;
  nlohmann::ordered_json chat_template_kwargs;  // object or null
  nlohmann::ordered_json tools;                 // passed to the template; null when absent
  ToolUse tool_use;
  std::string reasoning_format = "none";  // none | deepseek
  std::string truncation = "disabled";    // disabled | auto

  // Completions: a prompt string or token ids
  std::string prompt_text;
  std::vector<int32_t> prompt_tokens;
  bool prompt_is_tokens = false;
  bool echo = false;

  // The reply's required shape (response_format, json_schema or grammar); null: free text.
  std::shared_ptr<const Grammar> grammar;
  std::string grammar_trigger;  // the grammar applies from this text on (tool_choice auto)
  std::string grammar_param;    // the field the grammar came from, for errors
  bool render_special = false;  // control tokens in the reply as text (tool-call markers)

  std::optional<int64_t> max_tokens;  // max_tokens / max_completion_tokens / n_predict
  std::vector<std::string> stop;
  bool ignore_eos = false;
  bool logprobs = false;
  int32_t top_logprobs = 0;  // per-token alternatives (chat: top_logprobs; completions:
                             // logprobs: N; llama-server: n_probs)
  // The engine's sampler chain, read from the body once (sampling/params.h; llama-server's
  // names and defaults on every route: request_sampler_defaults), logprob count included.
  SamplerParams sampling;

  // llama-server
  bool return_tokens = false;  // the generated token ids in "tokens"
  bool cache_prompt = true;
  int32_t id_slot = -1;
};

// Parses a body into JSON, in the client's key order; 400 invalid_json (with the parser's
// position) or not_an_object.
nlohmann::ordered_json parse_json_body(const std::string& body);

// Each parses a body once into typed values (the sampler chain included), throwing ApiError
// (400, naming the field) for what it refuses. `vocab` reads logit_bias keys (token ids are
// checked against it, text keys are tokenized); without one (tests, the fuzzer) ids are not
// range-checked and text keys are refused.
// The template-facing values (messages, tools, chat_template_kwargs) keep the body's key order.
ParsedRequest parse_chat_request(const nlohmann::ordered_json& body, const VocabAccess& vocab = {});
ParsedRequest parse_completions_request(const nlohmann::ordered_json& body,
                                        const VocabAccess& vocab = {});
ParsedRequest parse_llama_completion_request(const nlohmann::ordered_json& body,
                                             const VocabAccess& vocab = {});

// The sampler settings a request starts from, the same on every route: llama-server's
// (SamplerParams{}: temperature 0.8, top_k 40, top_p 0.95, min_p 0.05), because the clients of a
// local server expect llama-server's behaviour for what they leave out; OpenAI's own default
// temperature (1.0) would make replies of small local models noticeably more random.
SamplerParams request_sampler_defaults();

}  // namespace hearth::server
