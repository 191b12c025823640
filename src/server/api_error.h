// OpenAI-style errors: {"error":{"message","type","param","code"}} with an HTTP status.
// Request handling throws ApiError; the route layer turns it (and anything else) into a reply.
//
// `param` and `code` are always set, so clients can branch on them without null checks:
// param names the part of the request at fault — a JSON field path ("messages[2].content"),
// "body" for the body as a whole, a header name ("Authorization", "Content-Length"), "path"
// for the URL, and "model" for conditions of the served model (loading, busy, failing).
#pragma once

#include <nlohmann/json.hpp>

#include <exception>
#include <stdexcept>
#include <string>

namespace hearth::server {

struct ApiError : std::runtime_error {
  int status;
  std::string type;       // invalid_request_error, authentication_error, server_error, ...
  std::string param;      // the offending part of the request (see above)
  std::string code;       // machine-readable (context_length_exceeded, model_not_found, ...)
  int retry_after_s = 0;  // > 0: sent as Retry-After (busy, loading)

  ApiError(int status, std::string message, std::string type, std::string param, std::string code)
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

// The reply for an exception that escaped a handler: an ApiError as it is; a hearth::Error
// (a value refused by a layer below: sampler, template, tokenizer) as 400 invalid_value naming
// `param`; anything else as 500 internal_error.
ApiError to_api_error(const std::exception_ptr& e, const std::string& param = "body");

}  // namespace hearth::server
