#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <random>

#include "server/api_error.h"
#include "server/json_fields.h"
#include "server/output_format.h"
#include "server/request.h"
#include "server/sampler_params_json.h"
#include "server/tool_params.h"
#include "util/error.h"
#include "util/json_depth.h"

namespace hearth::server {

using nlohmann::ordered_json;

using nlohmann::json;

namespace {

int64_t in_range(const char* key, int64_t v, int64_t lo, int64_t hi) {
  if (v < lo || v > hi)
    bad_param(key, fmt::format("'{}' must be between {} and {}, got {}", key, lo, hi, v));
  return v;
}

float in_range(const char* key, double v, double lo, double hi) {
  if (v < lo || v > hi)
    bad_param(key, fmt::format("'{}' must be between {} and {}, got {}", key, lo, hi, v));
  return static_cast<float>(v);
}

std::vector<std::string> parse_stop(const json& b) {
  const json* v = field(b, "stop");
  std::vector<std::string> out;
  if (!v) return out;
  if (v->is_string()) {
    out.push_back(v->get<std::string>());
  } else if (v->is_array()) {
    for (size_t i = 0; i < v->size(); ++i) {
      if (!(*v)[i].is_string()) wrong_type(fmt::format("stop[{}]", i), "a string", (*v)[i]);
      out.push_back((*v)[i].get<std::string>());
    }
  } else {
    wrong_type("stop", "a string or an array of strings", *v);
  }
  if (out.size() > 16) bad_param("stop", "at most 16 stop strings are supported");
  for (size_t i = 0; i < out.size(); ++i)
    if (out[i].empty()) bad_param(fmt::format("stop[{}]", i), "stop strings must not be empty");
  return out;
}

// Parameters that would change the reply in ways we do not implement: refused, not ignored.
void refuse_unsupported(const json& b) {
  if (auto n = get_int(b, "n"); n && *n != 1)
    throw ApiError(400, "only n=1 is supported", "invalid_request_error", "n",
                   "unsupported_parameter");
  if (auto n = get_int(b, "best_of"); n && *n != 1)
    throw ApiError(400, "only best_of=1 is supported", "invalid_request_error", "best_of",
                   "unsupported_parameter");
}

// The API's own ranges for the sampler fields both vocabularies share (OpenAI's names, and
// llama-server's, which the OpenAI routes accept as llama-server does), with OpenAI's messages.
void check_sampling_ranges(const json& b, bool llama_names) {
  if (auto t = get_number(b, "temperature"))
    in_range("temperature", *t, 0.0, llama_names ? 100.0 : 2.0);
  if (auto v = get_number(b, "top_p")) in_range("top_p", *v, 0.0, 1.0);
  if (auto v = get_number(b, "presence_penalty")) in_range("presence_penalty", *v, -2.0, 2.0);
  if (auto v = get_number(b, "frequency_penalty")) in_range("frequency_penalty", *v, -2.0, 2.0);
  if (auto v = get_int(b, "seed"); v && *v < 0 && !(llama_names && *v == -1))
    bad_param("seed", fmt::format("'seed' must be >= 0, got {}", *v));  // llama: -1 = random
  if (auto v = get_int(b, "top_k")) in_range("top_k", *v, 0, 1 << 20);
  if (auto v = get_number(b, "min_p")) in_range("min_p", *v, 0.0, 1.0);
  if (auto v = get_number(b, "typical_p")) in_range("typical_p", *v, 0.0, 1.0);
  if (auto v = get_number(b, "repeat_penalty")) in_range("repeat_penalty", *v, 0.0, 10.0);
  if (auto v = get_int(b, "repeat_last_n")) in_range("repeat_last_n", *v, -1, 1 << 20);
}

// The sampler chain, read once over the defaults (server/sampler_params_json.h); a value the
// sampler layer refuses is a 400 naming its field.
void parse_sampling(const json& b, const VocabAccess& vocab, bool llama_names, ParsedRequest& r) {
  check_sampling_ranges(b, llama_names);
  try {
    r.sampling = sampler_params_from_json(b, vocab, request_sampler_defaults());
  } catch (const ParamError& e) {
    bad_param(b.contains(e.param()) ? e.param() : "body", e.what());
  }
}

// The logprob count the reply reports, once the route's logprob fields are read.
void finish_sampling(ParsedRequest& r) {
  r.sampling.n_probs = r.logprobs ? std::max<int32_t>(1, r.top_logprobs) : 0;
}

// OpenAI fields hearth accepts and does not use: still refused when of the wrong type, as
// OpenAI refuses them (a client bug should not pass silently).
void check_ignored_fields(const json& b) {
  get_string(b, "user");
  get_string(b, "service_tier");
  get_bool(b, "store");
  if (const json* m = field(b, "metadata")) {
    if (!m->is_object()) wrong_type("metadata", "an object", *m);
    for (const auto& [key, value] : m->items())
      if (!value.is_string()) wrong_type("metadata." + key.substr(0, 64), "a string", value);
  }
}

void parse_common(const json& b, ParsedRequest& r) {
  check_ignored_fields(b);
  if (auto m = get_string(b, "model")) r.model = *m;
  if (auto v = get_bool(b, "stream")) r.stream = *v;
  if (const json* so = field(b, "stream_options")) {
    if (!so->is_object()) wrong_type("stream_options", "an object", *so);
    if (!r.stream)
      bad_param("stream_options", "'stream_options' is only allowed when 'stream' is true");
    if (auto v = get_bool(*so, "include_usage")) r.include_usage = *v;
  }
  r.stop = parse_stop(b);
  r.grammar = parse_output_format(b, &r.grammar_param);
  if (auto v = get_bool(b, "ignore_eos")) r.ignore_eos = *v;
  if (auto v = get_bool(b, "cache_prompt")) r.cache_prompt = *v;
  if (auto v = get_int(b, "id_slot"))
    r.id_slot = static_cast<int32_t>(in_range("id_slot", *v, -1, 1 << 20));
  if (auto v = get_int(b, "n_probs")) {
    r.top_logprobs = static_cast<int32_t>(in_range("n_probs", *v, 0, 20));
    r.logprobs = r.top_logprobs > 0;
  }
  if (auto v = get_int(b, "n_predict")) {
    in_range("n_predict", *v, -1, INT64_MAX);
    if (*v >= 0) r.max_tokens = *v;
  }
}

std::string content_text(const json& content, const std::string& where) {
  if (content.is_string()) return content.get<std::string>();
  if (content.is_null()) return "";
  if (!content.is_array()) wrong_type(where, "a string or an array of content parts", content);
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const json& part = content[i];
    const std::string p = fmt::format("{}[{}]", where, i);
    if (!part.is_object()) wrong_type(p, "an object", part);
    const json* type = field(part, "type");
    if (!type || !type->is_string()) bad_param(p + ".type", "a content part needs a string 'type'");
    if (type->get<std::string>() != "text")
      throw ApiError(400,
                     fmt::format("content part type '{}' is not supported (text only)",
                                 type->get<std::string>()),
                     "invalid_request_error", p + ".type", "unsupported_content_type");
    const json* t = field(part, "text");
    if (!t || !t->is_string()) bad_param(p + ".text", "a text part needs a string 'text'");
    text += t->get<std::string>();
  }
  return text;
}

// An assistant message's tool_calls, as OpenAI checks them: each {"id": string, "type":
// "function", "function": {"name": string, "arguments": string}}. `id` and `type` may be left
// out (llama-server's clients do); arguments may also be an object (templates take objects).
void check_tool_calls(const json& calls, const std::string& where) {
  if (calls.is_null()) return;
  if (!calls.is_array()) wrong_type(where, "an array", calls);
  for (size_t i = 0; i < calls.size(); ++i) {
    const std::string at = fmt::format("{}[{}]", where, i);
    const json& c = calls[i];
    if (!c.is_object()) wrong_type(at, "an object", c);
    get_string(c, "id", at + ".id");
    if (auto t = get_string(c, "type", at + ".type"); t && *t != "function")
      bad_param(at + ".type",
                fmt::format("'{}.type' must be 'function', got '{}'", at, t->substr(0, 80)));
    const json& f = required_object(c, "function", at + ".function");
    const json& name = required(f, "name", at + ".function.name");
    if (!name.is_string() || name.get_ref<const std::string&>().empty())
      wrong_type(at + ".function.name", "a non-empty string", name);
    if (const json* a = field(f, "arguments"); a && !a->is_string() && !a->is_object())
      wrong_type(at + ".function.arguments", "a string (JSON text) or an object", *a);
  }
}

// What a message may carry beside role and content; other keys pass through to the template.
void check_message_fields(const json& m, const std::string& role, const std::string& where) {
  get_string(m, "name", where + ".name");
  get_string(m, "tool_call_id", where + ".tool_call_id");
  get_string(m, "reasoning_content", where + ".reasoning_content");
  if (const json* calls = field(m, "tool_calls")) {
    if (role != "assistant")
      bad_param(where + ".tool_calls", "only assistant messages may carry 'tool_calls'");
    check_tool_calls(*calls, where + ".tool_calls");
  }
}

std::vector<ChatMessage> parse_messages(const json& b) {
  const json* v = field(b, "messages");
  if (!v) bad_param("messages", "'messages' is required", "missing_required_parameter");
  if (!v->is_array()) wrong_type("messages", "an array", *v);
  if (v->empty()) bad_param("messages", "'messages' must not be empty");
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < v->size(); ++i) {
    const json& m = (*v)[i];
    const std::string where = fmt::format("messages[{}]", i);
    if (!m.is_object()) wrong_type(where, "an object", m);
    const json* role = field(m, "role");
    if (!role || !role->is_string())
      bad_param(where + ".role", "each message needs a string 'role'");
    ChatMessage msg;
    msg.role = role->get<std::string>();
    if (msg.role != "system" && msg.role != "developer" && msg.role != "user" &&
        msg.role != "assistant" && msg.role != "tool")
      bad_param(
          where + ".role",
          fmt::format("unknown role '{}' (system, developer, user, assistant, tool)", msg.role));
    auto c = m.find("content");
    if (c == m.end() && !(msg.role == "assistant" && m.contains("tool_calls")))
      bad_param(where + ".content", "each message needs 'content'", "missing_required_parameter");
    if (c != m.end()) msg.content = content_text(*c, where + ".content");
    check_message_fields(m, msg.role, where);
    msg.extra = json::object();
    for (auto it = m.begin(); it != m.end(); ++it)
      if (it.key() != "role" && it.key() != "content") msg.extra[it.key()] = it.value();
    out.push_back(std::move(msg));
  }
  return out;
}

// OpenAI: a string, [string], [int...], or [[int...]]. More than one prompt is refused.
void parse_prompt(const json& b, ParsedRequest& r) {
  const json* v = field(b, "prompt");
  if (!v) bad_param("prompt", "'prompt' is required", "missing_required_parameter");
  const json* p = v;
  if (v->is_array() && !v->empty() && !(*v)[0].is_number()) {
    if (v->size() != 1)
      throw ApiError(400, "only one prompt per request is supported", "invalid_request_error",
                     "prompt", "unsupported_parameter");
    p = &(*v)[0];
  }
  if (p->is_string()) {
    r.prompt_text = p->get<std::string>();
    return;
  }
  if (!p->is_array()) wrong_type("prompt", "a string or an array of token ids", *p);
  r.prompt_is_tokens = true;
  for (size_t i = 0; i < p->size(); ++i) {
    const json& t = (*p)[i];
    if (!t.is_number_integer()) wrong_type(fmt::format("prompt[{}]", i), "a token id", t);
    const int64_t id = t.get<int64_t>();
    if (id < 0 || id > INT32_MAX) bad_param(fmt::format("prompt[{}]", i), "token id out of range");
    r.prompt_tokens.push_back(static_cast<int32_t>(id));
  }
  if (r.prompt_tokens.empty()) bad_param("prompt", "'prompt' must not be empty");
}

void parse_openai_max_tokens(const json& b, ParsedRequest& r) {
  for (const char* key : {"max_tokens", "max_completion_tokens"})
    if (auto v = get_int(b, key)) r.max_tokens = in_range(key, *v, 1, INT64_MAX);
}

}  // namespace

// Parsed once, in the client's key order: the chat template sees objects as they were written
// (tojson of tools, of tool-call arguments); the typed reads below take a sorted copy.
ordered_json parse_json_body(const std::string& body) {
  if (!json_depth_ok(body))
    throw ApiError(
        400, fmt::format("the body nests arrays and objects deeper than {} levels", kMaxJsonDepth),
        "invalid_request_error", "body", "invalid_json");
  ordered_json j;
  try {
    j = ordered_json::parse(body);
  } catch (
      const ordered_json::exception& e) {  // parse_error, and out_of_range for numbers like 1e400
    throw ApiError(400, fmt::format("the body is not valid JSON: {}", e.what()),
                   "invalid_request_error", "body", "invalid_json");
  }
  if (!j.is_object())
    throw ApiError(400, fmt::format("the body must be a JSON object, got {}", j.type_name()),
                   "invalid_request_error", "body", "invalid_json");
  return j;
}

SamplerParams request_sampler_defaults() {
  return SamplerParams{};
}

ParsedRequest parse_chat_request(const ordered_json& body, const VocabAccess& vocab) {
  const json b = body;
  ParsedRequest r;
  r.api = Api::ChatCompletions;
  refuse_unsupported(b);
  parse_common(b, r);
  parse_sampling(b, vocab, false, r);
  parse_openai_max_tokens(b, r);
  r.messages = parse_messages(b);
  r.messages_json = body.at("messages");
  if (auto v = get_bool(b, "logprobs")) r.logprobs = *v;
  if (auto v = get_int(b, "top_logprobs")) {
    r.top_logprobs = static_cast<int32_t>(in_range("top_logprobs", *v, 0, 20));
    if (!r.logprobs) bad_param("top_logprobs", "'top_logprobs' requires 'logprobs': true");
  }
  if (auto v = get_bool(b, "add_generation_prompt")) r.add_generation_prompt = *v;
  if (const json* v = field(b, "chat_template_kwargs")) {
    if (!v->is_object()) wrong_type("chat_template_kwargs", "an object", *v);
    // The one kwarg hearth itself reads (reasoning on or off); the rest are the template's.
    get_bool(*v, "enable_thinking", "chat_template_kwargs.enable_thinking");
    r.chat_template_kwargs = body.at("chat_template_kwargs");
  }
  r.tool_use = check_tools(b);
  if (field(b, "tools")) r.tools = body.at("tools");
  if (auto v = get_string(b, "reasoning_format")) {
    if (*v == "auto") *v = "deepseek";
    if (*v != "none" && *v != "deepseek")
      bad_param("reasoning_format",
                fmt::format("unknown reasoning_format '{}' (none, deepseek)", *v));
    r.reasoning_format = *v;
  }
  if (auto v = get_string(b, "truncation")) {
    if (*v != "disabled" && *v != "auto")
      bad_param("truncation", fmt::format("unknown truncation '{}' (disabled, auto)", *v));
    r.truncation = *v;
  }
  finish_sampling(r);
  return r;
}

ParsedRequest parse_completions_request(const ordered_json& body, const VocabAccess& vocab) {
  const json b = body;
  ParsedRequest r;
  r.api = Api::Completions;
  refuse_unsupported(b);
  if (field(b, "suffix"))
    throw ApiError(400, "'suffix' is not supported", "invalid_request_error", "suffix",
                   "unsupported_parameter");
  parse_common(b, r);
  parse_sampling(b, vocab, false, r);
  parse_openai_max_tokens(b, r);
  if (!r.max_tokens && !field(b, "n_predict")) r.max_tokens = 16;  // OpenAI's default
  parse_prompt(b, r);
  if (auto v = get_bool(b, "echo")) r.echo = *v;
  if (auto v = get_int(b, "logprobs")) {
    r.top_logprobs = static_cast<int32_t>(in_range("logprobs", *v, 0, 20));
    r.logprobs = true;
  }
  finish_sampling(r);
  return r;
}

ParsedRequest parse_llama_completion_request(const ordered_json& body, const VocabAccess& vocab) {
  const json b = body;
  ParsedRequest r;
  r.api = Api::LlamaCompletion;
  parse_common(b, r);
  parse_sampling(b, vocab, true, r);
  parse_prompt(b, r);
  if (auto v = get_bool(b, "return_tokens")) r.return_tokens = *v;
  finish_sampling(r);
  return r;
}

}  // namespace hearth::server
