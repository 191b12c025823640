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
#include "sampling/vocab_access.h"

namespace hearth::server {

enum class Api { ChatCompletions, Completions, LlamaCompletion };

// Sampler settings under OpenAI's and llama-server's names, validated with OpenAI's ranges and
// parameter names in errors. The engine's sampler chain is built by apply_sampling.
struct SamplingSpec {
  float temperature = 1.0f;
  std::optional<uint64_t> seed;
  int32_t top_k = 40;
  float top_p = 1.0f;
  float min_p = 0.0f;
  float typical_p = 1.0f;
  float repeat_penalty = 1.0f;
  int32_t repeat_last_n = 64;
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
};

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
  SamplingSpec sampling;

  // llama-server
  bool return_tokens = false;  // the generated token ids in "tokens"
  bool cache_prompt = true;
  int32_t id_slot = -1;
};

// Parses a body into JSON; 400 invalid_json (with the parser's position) or not_an_object.
nlohmann::json parse_json_body(const std::string& body);

ParsedRequest parse_chat_request(const nlohmann::json& body);
ParsedRequest parse_completions_request(const nlohmann::json& body);
ParsedRequest parse_llama_completion_request(const nlohmann::json& body);

// The one place a request's sampler settings become the engine's sampler chain (llama-server's
// names and defaults, logit_bias, DRY, ...; server/sampler_params_json.h) and logprob count.
// Throws hearth::Error naming a bad parameter.
void apply_sampling(const nlohmann::json& body, const ParsedRequest& parsed,
                    const VocabAccess& vocab, GenerationRequest& request);

}  // namespace hearth::server
