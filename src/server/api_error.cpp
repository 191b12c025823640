#include "server/api_error.h"

#include <fmt/format.h>

#include "util/error.h"

namespace hearth::server {

nlohmann::json ApiError::to_json() const {
  // Empty never reaches a client: every throw site names both, this is the last guard.
  nlohmann::json e = {{"message", what()},
                      {"type", type},
                      {"param", param.empty() ? std::string("body") : param},
                      {"code", code.empty() ? std::string("error") : code}};
  return {{"error", std::move(e)}};
}

void bad_param(const std::string& param, const std::string& message, const std::string& code) {
  throw ApiError(400, message, "invalid_request_error", param, code);
}

ApiError to_api_error(const std::exception_ptr& e, const std::string& param) {
  try {
    std::rethrow_exception(e);
  } catch (const ApiError& a) {
    return a;
  } catch (const Error& x) {
    return ApiError(400, x.what(), "invalid_request_error", param, "invalid_value");
  } catch (const std::exception& x) {
    return ApiError(500, fmt::format("internal error: {}", x.what()), "server_error", "body",
                    "internal_error");
  } catch (...) {
    return ApiError(500, "internal error", "server_error", "body", "internal_error");
  }
}

}  // namespace hearth::server
