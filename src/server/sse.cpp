#include "server/sse.h"

#include "server/openai_response.h"

namespace hearth::server {

std::string sse_frame(const nlohmann::json& payload) {
  return "data: " + dump_json(payload) + "\n\n";  // dump never emits a raw newline
}

std::string sse_done() {
  return "data: [DONE]\n\n";
}

}  // namespace hearth::server
