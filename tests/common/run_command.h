// Runs a shell command as a user would (the built `hearth` binary, usually) and collects its
// output (stdout and stderr together), exit status and wall time.
#pragma once

#include <sys/wait.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <string>

namespace hearth::test {

struct Ran {
  int status = -1;  // exit status; -1 when it did not exit normally (a signal) or did not start
  std::string output;
  double seconds = 0;
};

inline Ran run(const std::string& command) {
  Ran r;
  const auto t0 = std::chrono::steady_clock::now();
  std::FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
  const int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

// The `hearth` binary of this build.
inline std::string hearth_binary() {
  return std::string(HEARTH_BINARY_DIR) + "/src/hearth";
}

}  // namespace hearth::test
