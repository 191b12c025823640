#include "server/responder.h"

namespace hearth::server {

using nlohmann::json;

void Delta::append(const Delta& d) {
  text += d.text;
  records.insert(records.end(), d.records.begin(), d.records.end());
  ids.insert(ids.end(), d.ids.begin(), d.ids.end());
}

std::vector<TokenRecord> Responder::trimmed(const std::vector<TokenRecord>& records) const {
  std::vector<TokenRecord> out = records;
  for (TokenRecord& r : out)
    if (static_cast<int32_t>(r.top.size()) > s_.top_logprobs)
      r.top.resize(static_cast<size_t>(s_.top_logprobs));
  return out;
}

json OpenAiResponder::envelope(const char* object, json choices) const {
  return {{"id", s_.meta.id},
          {"object", object},
          {"created", s_.meta.created},
          {"model", s_.meta.model},
          {"system_fingerprint", "hearth"},
          {"choices", std::move(choices)}};
}

json OpenAiResponder::one_choice(const char* key, json value, json logprobs, json finish_reason) {
  return json::array({{{"index", 0},
                       {key, std::move(value)},
                       {"logprobs", std::move(logprobs)},
                       {"finish_reason", std::move(finish_reason)}}});
}

json OpenAiResponder::chunk(json value, json finish_reason, json logprobs) const {
  json j = envelope(shape_.chunk_object, one_choice(shape_.chunk_key, std::move(value),
                                                    std::move(logprobs), std::move(finish_reason)));
  if (s_.include_usage) j["usage"] = nullptr;
  return j;
}

json OpenAiResponder::reply(json value, const Outcome& o, json logprobs, const char* reason) const {
  json j =
      envelope(shape_.object, one_choice(shape_.whole_key, std::move(value), std::move(logprobs),
                                         reason ? reason : openai_finish_reason(o.reason)));
  j["usage"] = usage_json(o.stats);
  j["timings"] = timings_json(o.stats);
  return j;
}

std::vector<json> OpenAiResponder::finish_with(json last, const Outcome& o,
                                               const char* reason) const {
  std::vector<json> out;
  out.push_back(chunk(std::move(last), reason ? reason : openai_finish_reason(o.reason), nullptr));
  if (s_.include_usage) {
    json usage = envelope(shape_.chunk_object, json::array());
    usage["usage"] = usage_json(o.stats);
    usage["timings"] = timings_json(o.stats);
    out.push_back(std::move(usage));
  }
  return out;
}

}  // namespace hearth::server
