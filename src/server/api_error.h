// OpenAI-style errors: {"error":{"message","type","param","code"}} with an HTTP status.
// Request handling throws ApiError; the route layer turns it (and anything else) into a reply.
#pragma once

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>

namespace hearth::server {

struct ApiError : std::runtime_error {
  int status;
  std::string type;       // invalid_request_error, authentication_error, server_error, ...
  std::string param;      // the offending field ("messages[2].content"), empty when none
  std::string code;       // machine-readable (context_length_exceeded, model_not_found, ...)
  int retry_after_s = 0;  // > 0: sent as Retry-After (busy, loading)

  ApiError(int status, std::string message, std::string type = "invalid_request_error",
           std::string param = "", std::string code = "")
      : std::runtime_error(std::move(message)),
        status(status),
        type(std::move(type)),
        param(std::move(param)),
        code(std::move(code)) {}

  nlohmann::json to_json() const;
};

// 400 invalid_request_error naming the parameter.
[[noreturn]] void bad_param(const std::string& param, const std::string& message,
                            const std::string& code = "invalid_value");

}  // namespace hearth::server
