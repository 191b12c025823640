// Errors: one exception type whose message is meant for a human ("file: what is wrong").
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace hearth {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) {
  throw Error(fmt::format(f, std::forward<Args>(args)...));
}

// A value refused for one named parameter (a sampler setting, a request field): the layers
// above name it to the client without reading the message.
class ParamError : public Error {
 public:
  ParamError(std::string param, const std::string& what) : Error(what), param_(std::move(param)) {}
  const std::string& param() const { return param_; }

 private:
  std::string param_;
};

template <typename... Args>
[[noreturn]] void fail_param(std::string param, fmt::format_string<Args...> f, Args&&... args) {
  throw ParamError(std::move(param), fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace hearth
