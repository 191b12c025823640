// libFuzzer target: the server's request parser. Any body must give a ParsedRequest (whose
// sampler chain the sampler layer accepts) or an ApiError (a 4xx), never another exception, a
// crash or a hang. The first byte picks the API.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "server/api_error.h"
#include "server/prompt_builder.h"
#include "server/request.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string body(reinterpret_cast<const char*>(data + 1), size - 1);
  using namespace hearth::server;
  try {
    const nlohmann::ordered_json j = parse_json_body(body);
    hearth::VocabAccess vocab;
    vocab.n_vocab = 32000;
    vocab.token_piece = [](int32_t) { return std::string("x"); };
    vocab.tokenize = [](std::string_view t) { return std::vector<int32_t>(t.size() % 4, 1); };
    ParsedRequest r;
    switch (data[0] % 3) {
      case 0:
        r = parse_chat_request(j, vocab);
        break;
      case 1:
        r = parse_completions_request(j, vocab);
        break;
      default:
        r = parse_llama_completion_request(j, vocab);
        break;
    }
    if (r.api == Api::ChatCompletions) {
      // The server's fallback when a model has no template: ChatML.
      static const hearth::chat::ChatFormatter chatml(std::nullopt, "", "");
      const hearth::chat::Rendered p =
          chatml.format(r.messages_json, r.tools, r.add_generation_prompt);
      for (auto [b, e] : p.special_ok)
        if (b > e || e > p.text.size()) std::abort();
      check_context(static_cast<int64_t>(p.text.size()), r.max_tokens, 1 << 20);
    }
    hearth::validate(r.sampling);  // what the parse gives, the sampler layer accepts
  } catch (const ApiError& e) {
    if (e.status < 400 || e.status > 499) std::abort();
    (void)e.to_json().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  return 0;
}
