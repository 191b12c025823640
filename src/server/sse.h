// Server-Sent Events framing as OpenAI sends it: "data: {json}\n\n", ending with
// "data: [DONE]\n\n".
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace hearth::server {

std::string sse_frame(const nlohmann::json& payload);
std::string sse_done();

}  // namespace hearth::server
