// Locating ../shared test data: $HEARTH_SHARED_DIR, else the folder beside the source tree.
// Tests skip with a clear message when the data is absent.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace hearth::test {

inline std::string shared_dir() {
  if (const char* env = std::getenv("HEARTH_SHARED_DIR"); env && *env) return env;
  return HEARTH_SHARED_DIR_DEFAULT;
}

inline std::string shared_path(const std::string& rel) { return shared_dir() + "/" + rel; }

inline bool shared_exists(const std::string& rel) {
  return std::filesystem::exists(shared_path(rel));
}

inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

}  // namespace hearth::test

// Skips the current test unless ../shared/<rel> exists; binds its full path to `var`.
#define HEARTH_SHARED_OR_SKIP(var, rel)                                                      \
  if (!::hearth::test::shared_exists(rel))                                                   \
    GTEST_SKIP() << "SKIP: test data not found at " << ::hearth::test::shared_path(rel)      \
                 << " (expected ../shared beside the project root, or set HEARTH_SHARED_DIR)"; \
  const std::string var = ::hearth::test::shared_path(rel)
