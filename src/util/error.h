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

}  // namespace hearth
