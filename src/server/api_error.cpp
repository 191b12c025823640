#include "server/api_error.h"

namespace hearth::server {

nlohmann::json ApiError::to_json() const {
  nlohmann::json e = {{"message", what()},
                      {"type", type},
                      {"param", param.empty() ? nlohmann::json(nullptr) : nlohmann::json(param)},
                      {"code", code.empty() ? nlohmann::json(nullptr) : nlohmann::json(code)}};
  return {{"error", std::move(e)}};
}

void bad_param(const std::string& param, const std::string& message, const std::string& code) {
  throw ApiError(400, message, "invalid_request_error", param, code);
}

}  // namespace hearth::server
