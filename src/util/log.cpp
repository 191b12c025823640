#include "util/log.h"

#include <atomic>
#include <cstdio>
#include <mutex>

namespace hearth::log {
namespace {
std::atomic<Level> g_level{Level::Warn};
std::mutex g_mutex;
}  // namespace

void set_level(Level l) { g_level.store(l, std::memory_order_relaxed); }
Level level() { return g_level.load(std::memory_order_relaxed); }

void write(Level l, std::string_view msg) {
  static constexpr const char* kNames[] = {"debug", "info", "warn", "error", ""};
  std::lock_guard lock(g_mutex);
  std::fprintf(stderr, "hearth: %s: %.*s\n", kNames[static_cast<int>(l)],
               static_cast<int>(msg.size()), msg.data());
}

}  // namespace hearth::log
