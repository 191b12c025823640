// One responder per API: the one place an API's reply JSON is written, for both ways of
// answering. Streamed, the route sends start(), then delta() of each piece of the generation,
// then finish() as Server-Sent Events; answered whole, it gathers the pieces and sends whole() as
// one body. chat_responder.cpp (/v1/chat/completions), completions_responder.cpp
// (/v1/completions) and llama_responder.cpp (llama-server's /completion) implement it.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chat/reply_stream.h"
#include "engine/request.h"
#include "server/openai_response.h"
#include "server/request.h"
#include "server/tool_call_reader.h"
#include "tokenizer/tokenizer.h"

namespace hearth::server {

// A piece of the reply: text, with the tokens generated since the previous piece (their text may
// be held back by the coalescer or a pending stop string, so the ids and the text need not match
// one to one) and, when logprobs were asked, their records.
struct Delta {
  std::string text;
  std::vector<TokenRecord> records;
  std::vector<int32_t> ids;
  bool empty() const { return text.empty() && records.empty() && ids.empty(); }
  void append(const Delta& d);
};

// How a generation ended.
struct Outcome {
  FinishReason reason = FinishReason::Stop;
  RequestStats stats;
  std::string error;
  bool client_gone = false;
  int32_t last_token = -1;
};

// What the reply depends on besides the generation.
struct ReplySettings {
  ResponseMeta meta;
  const Tokenizer* tok = nullptr;
  bool per_token = false;         // logprobs asked: one delta per token, each with its record
  int32_t top_logprobs = 0;       // alternatives kept per token
  bool include_usage = false;     // streamed: a usage chunk at the end (OpenAI)
  bool return_tokens = false;     // the generated ids (llama-server)
  std::string echo;               // the prompt text to repeat before the reply (completions)
  std::vector<std::string> stop;  // the request's stop strings (llama-server names the match)
};

class Responder {
 public:
  explicit Responder(ReplySettings settings) : s_(std::move(settings)) {}
  virtual ~Responder() = default;

  // Streamed: the payloads to send before any delta.
  virtual std::vector<nlohmann::json> start() { return {}; }
  // Streamed: the payloads for one delta (usually one; none when there is nothing to send yet).
  virtual std::vector<nlohmann::json> delta(const Delta& d) = 0;
  // Streamed: the payloads that end a generation that did not fail.
  virtual std::vector<nlohmann::json> finish(const Outcome& o) = 0;
  // Streamed: whether the stream ends with "data: [DONE]" (OpenAI's, not llama-server's).
  virtual bool ends_with_done() const { return true; }
  // Answered whole: the body, from the whole generation (every delta appended).
  virtual nlohmann::json whole(const Delta& all, const Outcome& o) = 0;
  // After finish() or whole(): the reply as a chat message the client can send back (role,
  // content, reasoning_content, tool_calls); null for APIs without messages.
  virtual nlohmann::ordered_json reply_message() const { return nullptr; }

 protected:
  // The records with at most top_logprobs alternatives each.
  std::vector<TokenRecord> trimmed(const std::vector<TokenRecord>& records) const;

  ReplySettings s_;
};

// `reply` splits off the reasoning when the request asked for it; `tools` (null: none) turns
// the calls in the reply into tool_calls.
std::unique_ptr<Responder> make_chat_responder(ReplySettings settings, chat::ReplyStream reply,
                                               std::unique_ptr<ToolCallReader> tools = nullptr);
std::unique_ptr<Responder> make_completions_responder(ReplySettings settings);
std::unique_ptr<Responder> make_llama_responder(ReplySettings settings);

// OpenAI's replies (chat and completions): the envelope (id, object, created, model, one
// choice, usage, timings) written once, around what each API puts in its choice.
class OpenAiResponder : public Responder {
 public:
  struct Shape {
    const char* object;        // of the whole reply
    const char* chunk_object;  // of a stream chunk (and of the usage chunk)
    const char* whole_key;     // the choice's field: "message" / "text"
    const char* chunk_key;     // ... in a chunk: "delta" / "text"
  };
  OpenAiResponder(ReplySettings settings, Shape shape)
      : Responder(std::move(settings)), shape_(shape) {}

  // The last payloads of a stream: the finishing chunk carrying `last` (then the usage chunk
  // when asked for). `reason`: the finish_reason, when not the outcome's own.
  std::vector<nlohmann::json> finish_with(nlohmann::json last, const Outcome& o,
                                          const char* reason = nullptr) const;

 protected:
  nlohmann::json chunk(nlohmann::json value, nlohmann::json finish_reason,
                       nlohmann::json logprobs) const;
  nlohmann::json reply(nlohmann::json value, const Outcome& o, nlohmann::json logprobs,
                       const char* reason = nullptr) const;

 private:
  nlohmann::json envelope(const char* object, nlohmann::json choices) const;
  // A choices list of one: {index 0, key: value, logprobs, finish_reason}.
  static nlohmann::json one_choice(const char* key, nlohmann::json value, nlohmann::json logprobs,
                                   nlohmann::json finish_reason);

  Shape shape_;
};

}  // namespace hearth::server
