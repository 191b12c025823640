// `hearth serve` start-up as a user meets it (the built binary): models that do not load, a port
// already taken, a signal during a slow start. Every child is bounded by `timeout` or killed.
#include <gtest/gtest.h>
#include <httplib.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
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
#include <vector>

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
  // A named pipe: opening it would wait for a writer forever.
  ASSERT_EQ(::mkfifo((dir_ / "pipe.gguf").c_str(), 0600), 0);
  const std::vector<std::string> files = {
      (dir_ / "missing.gguf").string(),   (dir_ / "truncated.gguf").string(),
      (dir_ / "random.gguf").string(),    (dir_ / "text.gguf").string(),
      (dir_ / "directory.gguf").string(), (dir_ / "pipe.gguf").string()};
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
  std::printf("[ info ] 12 failed starts, slowest %.3f s\n", slowest);
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

// A `hearth serve` child on a free port, its stderr in a log; killed (SIGKILL) when destroyed.
struct ServeChild {
  pid_t pid = -1;
  int port = 0;
  std::string log;
  ServeChild(const fs::path& dir, std::vector<std::string> args,
             std::vector<std::string> env = {}) {
    log = (dir / "serve.log").string();
    const std::string bin = hearth();
    args.insert(args.begin(), {"hearth", "serve", "--port", "0"});
    std::vector<char*> argv, envp;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    env.push_back(std::string("PATH=") + (std::getenv("PATH") ? std::getenv("PATH") : ""));
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    const int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid = ::fork();
    if (pid == 0) {
      ::dup2(log_fd, STDERR_FILENO);
      ::execve(bin.c_str(), argv.data(), envp.data());
      ::_exit(127);
    }
    ::close(log_fd);
  }
  // Waits for "ready" (true) or the child's exit / `seconds` (false); reads the port.
  bool wait_ready(double seconds = 20) {
    const auto until = Clock::now() + std::chrono::duration<double>(seconds);
    while (Clock::now() < until) {
      const std::string out = hearth::test::read_file(log);
      if (const size_t at = out.find("listening on http://127.0.0.1:"); at != std::string::npos)
        port = std::atoi(out.c_str() + at + std::strlen("listening on http://127.0.0.1:"));
      if (out.find("hearth: ready") != std::string::npos) return port > 0;
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        pid = -1;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }
  // The status of GET/POST `path` with an optional bearer `key`, 0 on failure.
  int status(const std::string& method, const std::string& path, const std::string& key = "") {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(20, 0);
    httplib::Headers h;
    if (!key.empty()) h.emplace("Authorization", "Bearer " + key);
    auto r = method == "POST"
                 ? c.Post(path.c_str(), h, R"({"prompt":"a","max_tokens":1})", "application/json")
                 : c.Get(path.c_str(), h);
    return r ? r->status : 0;
  }
  ~ServeChild() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
};

// A FIFO in --cache-dir (under a block's name or not) does not stop the start-up scan.
TEST_F(ServeStartup, AFifoInTheCacheFolderDoesNotBlockStartUp) {
  HEARTH_SHARED_OR_SKIP(stories, "models/stories260K.gguf");
  const fs::path cache = dir_ / "cache";
  {  // A first run makes the folder layout (one subfolder per model).
    ServeChild first(dir_, {"-m", stories, "--cache-dir", cache.string()});
    ASSERT_TRUE(first.wait_ready()) << hearth::test::read_file(first.log);
  }
  size_t fifos = 0;
  for (const auto& d : fs::recursive_directory_iterator(cache))
    if (d.is_directory()) fifos += ::mkfifo((d.path() / "0123456789abcdef.kvb").c_str(), 0600) == 0;
  ASSERT_EQ(::mkfifo((cache / "0000000000000001.kvb").c_str(), 0600), 0);
  EXPECT_GT(fifos, 0u);
  ServeChild again(dir_, {"-m", stories, "--cache-dir", cache.string()});
  ASSERT_TRUE(again.wait_ready(10)) << hearth::test::read_file(again.log);
  EXPECT_EQ(again.status("POST", "/v1/completions", ""), 200);
}

// The API key from the environment or a file, so that it does not show in `ps`.
TEST_F(ServeStartup, TheApiKeyComesFromTheEnvironmentOrAFile) {
  HEARTH_SHARED_OR_SKIP(stories, "models/stories260K.gguf");
  {
    ServeChild env(dir_, {"-m", stories}, {"HEARTH_API_KEY=s3cret-env"});
    ASSERT_TRUE(env.wait_ready()) << hearth::test::read_file(env.log);
    EXPECT_EQ(env.status("POST", "/v1/completions", ""), 401);
    EXPECT_EQ(env.status("POST", "/v1/completions", "s3cret-env"), 200);
  }
  std::ofstream(dir_ / "key") << "  s3cret-file \nsecond line ignored\n";
  {
    ServeChild file(dir_, {"-m", stories, "--api-key-file", (dir_ / "key").string()});
    ASSERT_TRUE(file.wait_ready()) << hearth::test::read_file(file.log);
    EXPECT_EQ(file.status("POST", "/v1/completions", "s3cret-env"), 401);
    EXPECT_EQ(file.status("POST", "/v1/completions", "s3cret-file"), 200);
    EXPECT_EQ(file.status("GET", "/health", ""), 200);
  }
  // Unreadable, empty, or both ways at once: a clear error at start.
  std::ofstream(dir_ / "empty") << "\n";
  ASSERT_EQ(::mkfifo((dir_ / "keypipe").c_str(), 0600), 0);
  for (const std::string& bad : {"--api-key-file " + (dir_ / "missing").string(),
                                 "--api-key-file " + (dir_ / "empty").string(),
                                 "--api-key-file " + (dir_ / "keypipe").string(),
                                 "--api-key x --api-key-file " + (dir_ / "key").string()}) {
    Ran r = run("timeout -k 1 5 " + hearth() + " serve --port 0 -m " + stories + " " + bad);
    EXPECT_EQ(r.status, 1) << bad << ": " << r.output;
    EXPECT_NE(r.output.find("--api-key"), std::string::npos) << r.output;
  }
}

}  // namespace
