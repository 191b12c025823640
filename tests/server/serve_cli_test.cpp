// The `hearth serve` and `hearth pull` commands as a user runs them (the built binary).
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>

#include "common/run_command.h"
#include "common/shared_data.h"

namespace {

using hearth::test::Ran;
using hearth::test::run;

std::string hearth() {
  return hearth::test::hearth_binary();
}

TEST(ServeCli, WithoutAModelOfflineFailsFastSayingHowToPassOne) {
  if (!std::filesystem::exists(hearth())) GTEST_SKIP() << "hearth binary not built";
  const std::string dir = std::filesystem::temp_directory_path() / "hearth-serve-cli-models";
  const auto t0 = std::chrono::steady_clock::now();
  Ran r = run("env -u HEARTH_MODEL HEARTH_MODEL_DIR=" + dir +
              " HF_ENDPOINT=http://127.0.0.1:1 timeout 60 " + hearth() + " serve --port 0");
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.status, 124) << "it hung";
  EXPECT_NE(r.output.find("-m"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("cannot reach"), std::string::npos) << r.output;
  std::printf("[ info ] offline serve failed after %.2f s\n", s);
}

TEST(PullCli, DownloadsFromTheEndpointInTheEnvironment) {
  if (!std::filesystem::exists(hearth())) GTEST_SKIP() << "hearth binary not built";
  const std::string content(300000, 'g');
  httplib::Server fixture;
  fixture.Get("/acme/tiny/resolve/main/tiny.gguf",
              [&](const httplib::Request&, httplib::Response& res) {
                res.set_content(content, "application/octet-stream");
              });
  const int port = fixture.bind_to_any_port("127.0.0.1");
  std::thread t([&] { fixture.listen_after_bind(); });
  const std::string dir = std::filesystem::temp_directory_path() / "hearth-pull-cli-models";
  std::filesystem::remove_all(dir);
  Ran r = run("HF_ENDPOINT=http://127.0.0.1:" + std::to_string(port) + " " + hearth() +
              " pull acme/tiny/tiny.gguf --dir " + dir);
  fixture.stop();
  t.join();
  EXPECT_EQ(r.status, 0) << r.output;
  const std::string path = dir + "/acme/tiny/tiny.gguf";
  EXPECT_NE(r.output.find(path), std::string::npos) << r.output;
  EXPECT_EQ(hearth::test::read_file(path), content);
  std::filesystem::remove_all(dir);
}

}  // namespace
