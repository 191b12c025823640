// Minimal leveled logging to stderr. Quiet by default in libraries; the CLI sets the level.
#pragma once

#include <fmt/format.h>

#include <string_view>

namespace hearth::log {

enum class Level { Debug = 0, Info = 1, Warn = 2, Error = 3, Off = 4 };

void set_level(Level l);
Level level();
void write(Level l, std::string_view msg);

template <typename... Args>
void info(fmt::format_string<Args...> f, Args&&... args) {
  if (level() <= Level::Info) write(Level::Info, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void warn(fmt::format_string<Args...> f, Args&&... args) {
  if (level() <= Level::Warn) write(Level::Warn, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void debug(fmt::format_string<Args...> f, Args&&... args) {
  if (level() <= Level::Debug) write(Level::Debug, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace hearth::log
