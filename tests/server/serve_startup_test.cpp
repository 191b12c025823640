// `hearth serve` start-up as a user meets it (the built binary): models that do not load, a port
// already taken, a signal during a slow start. Every child is bounded by `timeout` or killed.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>

#include "common/run_command.h"
#include "common/shared_data.h"

namespace {

using hearth::test::Ran;
using hearth::test::run;

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string hearth() {
  return hearth::test::hearth_binary();
}

// A loopback socket that listens and never accepts: connections to it complete (the backlog)
// and then hear nothing, like a server that hangs.
struct SilentListener {
  int fd = -1;
  int port = 0;
  SilentListener() {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), len) != 0 || ::listen(fd, 16) != 0) return;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ~SilentListener() { ::close(fd); }
};

class ServeStartup : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(hearth())) GTEST_SKIP() << "hearth binary not built";
    dir_ = fs::temp_directory_path() / ("hearth-startup-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(ServeStartup, ModelsThatDoNotLoadExitOneAtOnce) {
  HEARTH_SHARED_OR_SKIP(stories, "models/stories260K.gguf");
  const std::string whole = hearth::test::read_file(stories);
  std::ofstream(dir_ / "truncated.gguf", std::ios::binary) << whole.substr(0, 1000);
  std::string noise(5000, '\0');
  std::mt19937 rng(7);
  for (char& c : noise) c = static_cast<char>(rng());
  std::ofstream(dir_ / "random.gguf", std::ios::binary) << noise;
  std::ofstream(dir_ / "text.gguf") << "hello, I am not a model\n";
  fs::create_directories(dir_ / "directory.gguf");
  const std::vector<std::string> files = {
      (dir_ / "missing.gguf").string(), (dir_ / "truncated.gguf").string(),
      (dir_ / "random.gguf").string(), (dir_ / "text.gguf").string(),
      (dir_ / "directory.gguf").string()};
  double slowest = 0;
  for (int round = 0; round < 2; ++round) {
    for (const std::string& f : files) {
      // timeout -k: a hang shows as 124/137 instead of hanging the test.
      Ran r = run("timeout -k 1 5 " + hearth() + " serve --port 0 -m " + f);
      EXPECT_EQ(r.status, 1) << f << ": " << r.output;
      EXPECT_LT(r.seconds, 1.0) << f;
      EXPECT_NE(r.output.find("error"), std::string::npos) << r.output;
      EXPECT_NE(r.output.find(f), std::string::npos) << "the reason names the file: " << r.output;
      slowest = std::max(slowest, r.seconds);
    }
  }
  std::printf("[ info ] 10 failed starts, slowest %.3f s\n", slowest);
}

TEST_F(ServeStartup, APortInUseIsAClearErrorBeforeLoading) {
  SilentListener taken;
  ASSERT_GT(taken.port, 0);
  // The model path does not exist: the port is checked first, so the error is about the port.
  Ran r = run("timeout -k 1 5 " + hearth() + " serve --port " + std::to_string(taken.port) +
              " -m " + (dir_ / "missing.gguf").string());
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("address already in use"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("missing.gguf"), std::string::npos) << r.output;
  EXPECT_LT(r.seconds, 1.0);
}

// Starts `hearth serve` pulling its default model from an endpoint that never answers (a slow
// start-up), sends `sig` after a moment, and checks the exit.
void signal_during_startup(const fs::path& dir, int sig) {
  SilentListener endpoint;
  ASSERT_GT(endpoint.port, 0);
  const std::string log = (dir / "serve.log").string();
  // Everything the child needs is prepared before fork(): between fork and exec only
  // async-signal-safe calls (this process has threads).
  const std::string bin = hearth();
  const std::string model_dir = "HEARTH_MODEL_DIR=" + (dir / "models").string();
  const std::string endpoint_env = "HF_ENDPOINT=http://127.0.0.1:" + std::to_string(endpoint.port);
  const std::string path_env =
      std::string("PATH=") + (std::getenv("PATH") ? std::getenv("PATH") : "");
  char* const argv[] = {const_cast<char*>("hearth"), const_cast<char*>("serve"),
                        const_cast<char*>("--port"), const_cast<char*>("0"), nullptr};
  char* const envp[] = {const_cast<char*>(model_dir.c_str()),
                        const_cast<char*>(endpoint_env.c_str()),
                        const_cast<char*>(path_env.c_str()), nullptr};
  const int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(log_fd, 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::dup2(log_fd, STDERR_FILENO);
    ::execve(bin.c_str(), argv, envp);
    ::_exit(127);
  }
  ::close(log_fd);
  // The signal goes once the server is stuck in its download: after it says it is pulling the
  // default model (the handlers are installed before that). A fixed pause raced a slow start
  // under ASan/UBSan on a loaded machine, where the default action killed the child.
  const auto up_by = Clock::now() + std::chrono::seconds(20);
  while (hearth::test::read_file(log).find("pulling the default model") == std::string::npos &&
         Clock::now() < up_by)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto t0 = Clock::now();
  ::kill(pid, sig);
  int status = 0;
  pid_t done = 0;
  while ((done = ::waitpid(pid, &status, WNOHANG)) == 0 &&
         Clock::now() - t0 < std::chrono::seconds(3))
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  if (done == 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    FAIL() << "still running 3 s after the signal";
  }
  const std::string out = hearth::test::read_file(log);
  EXPECT_TRUE(WIFEXITED(status)) << out;
  EXPECT_EQ(WEXITSTATUS(status), 0) << out;
  EXPECT_NE(out.find("during start-up"), std::string::npos) << out;
  EXPECT_LT(s, 1.0);
  std::printf("[ info ] %s during start-up: exited after %.3f s\n", strsignal(sig), s);
}

TEST_F(ServeStartup, SigtermDuringASlowStartExitsCleanly) {
  signal_during_startup(dir_, SIGTERM);
}

TEST_F(ServeStartup, SigintDuringASlowStartExitsCleanly) {
  signal_during_startup(dir_, SIGINT);
}

}  // namespace
