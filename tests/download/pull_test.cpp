// `hearth pull` against a local HTTP fixture laid out like Hugging Face (never the internet):
// listing, HEAD with X-Linked-Size/X-Linked-Etag, ranged resume, hash and size checks.
#include <httplib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "common/shared_data.h"
#include "download/downloader.h"
#include "util/error.h"
#include "util/sha256.h"

namespace hearth::download {
namespace {

namespace fs = std::filesystem;

struct Fixture {
  httplib::Server http;
  std::thread thread;
  int port = 0;
  std::string content;
  std::string advertised_sha;
  std::atomic<int> range_requests{0};

  explicit Fixture(std::string file) : content(std::move(file)) {
    advertised_sha = sha256_hex(content);
    http.Get("/api/models/acme/tiny", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(R"({"siblings":[{"rfilename":"README.md"},{"rfilename":"tiny-f32.gguf"},)"
                      R"({"rfilename":"tiny-Q4_K_M.gguf"}]})",
                      "application/json");
    });
    auto serve = [this](const httplib::Request& req, httplib::Response& res) {
      res.set_header("X-Linked-Size", std::to_string(content.size()));
      res.set_header("X-Linked-Etag", "\"" + advertised_sha + "\"");
      if (req.has_header("Range")) ++range_requests;
      res.set_content(content, "application/octet-stream");  // httplib answers Range with 206
    };
    http.Get(R"(/acme/tiny/resolve/main/(tiny-[A-Za-z0-9_]+\.gguf))", serve);
    port = http.bind_to_any_port("127.0.0.1");
    thread = std::thread([this] { http.listen_after_bind(); });
  }
  ~Fixture() {
    http.stop();
    thread.join();
  }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port); }
};

std::string temp_dir(const char* name) {
  fs::path p = fs::temp_directory_path() / fmt::format("hearth-pull-{}-{}", name, ::getpid());
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

// Options that pull from the fixture into a fresh folder named after `name`.
PullOptions options_for(const Fixture& f, const char* name) {
  PullOptions o;
  o.endpoint = f.endpoint();
  o.model_dir = temp_dir(name);
  return o;
}

// The message of the Error a pull throws ("" and a failure when it succeeds).
std::string pull_error(const PullSpec& spec, const PullOptions& o) {
  try {
    pull(spec, o);
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

std::string gguf_bytes() {
  if (test::shared_exists("models/stories260K.gguf"))
    return test::read_file(test::shared_path("models/stories260K.gguf"));
  std::string s = "GGUF";
  for (int i = 0; i < 100000; ++i) s += static_cast<char>(i * 7);
  return s;
}

TEST(PullSpec, Parsing) {
  auto s = parse_pull_spec("acme/tiny/sub/f.gguf");
  EXPECT_EQ(s.repo, "acme/tiny");
  EXPECT_EQ(s.file, "sub/f.gguf");
  EXPECT_EQ(parse_pull_spec("acme/tiny").file, "");
  EXPECT_THROW(parse_pull_spec("tiny"), Error);
  EXPECT_THROW(parse_pull_spec("acme/../x"), Error);
  EXPECT_THROW(parse_pull_spec("acme//x"), Error);
}

TEST(Pull, DownloadsVerifiesAndPicksAGguf) {
  Fixture f(gguf_bytes());
  PullOptions o = options_for(f, "full");
  uint64_t last = 0;
  o.progress = [&](uint64_t done, uint64_t total) {
    EXPECT_EQ(total, f.content.size());
    EXPECT_GE(done, last);
    last = done;
  };
  const std::string path = pull(parse_pull_spec("acme/tiny"), o);  // picks the Q4_K_M file
  EXPECT_EQ(fs::path(path).filename(), "tiny-Q4_K_M.gguf");
  EXPECT_EQ(test::read_file(path), f.content);
  EXPECT_EQ(last, f.content.size());
  EXPECT_FALSE(fs::exists(path + ".part"));
  // A second pull finds it complete.
  EXPECT_EQ(pull(parse_pull_spec("acme/tiny/tiny-Q4_K_M.gguf"), o), path);
  fs::remove_all(o.model_dir);
}

TEST(Pull, ResumesFromAPartialFile) {
  Fixture f(gguf_bytes());
  PullOptions o = options_for(f, "resume");
  const PullSpec spec = parse_pull_spec("acme/tiny/tiny-f32.gguf");
  const std::string dest = local_path(spec, o.model_dir);
  fs::create_directories(fs::path(dest).parent_path());
  {
    std::ofstream part(dest + ".part", std::ios::binary);
    part << f.content.substr(0, f.content.size() / 3);
  }
  uint64_t first_progress = 0;
  o.progress = [&](uint64_t done, uint64_t) {
    if (first_progress == 0) first_progress = done;
  };
  EXPECT_EQ(pull(spec, o), dest);
  EXPECT_EQ(f.range_requests.load(), 1);
  EXPECT_GT(first_progress, f.content.size() / 3);  // counted from the partial file
  EXPECT_EQ(test::read_file(dest), f.content);
  fs::remove_all(o.model_dir);
}

TEST(Pull, WrongHashIsAnErrorAndNothingIsKept) {
  Fixture f(gguf_bytes());
  f.advertised_sha = std::string(64, 'a');
  PullOptions o = options_for(f, "badhash");
  const PullSpec spec = parse_pull_spec("acme/tiny/tiny-f32.gguf");
  const std::string error = pull_error(spec, o);
  EXPECT_NE(error.find("SHA-256"), std::string::npos) << error;
  EXPECT_FALSE(fs::exists(local_path(spec, o.model_dir)));
  EXPECT_FALSE(fs::exists(local_path(spec, o.model_dir) + ".part"));
  fs::remove_all(o.model_dir);
}

TEST(Pull, MissingFileAndUnreachableEndpointFailClearly) {
  Fixture f(gguf_bytes());
  PullOptions o = options_for(f, "missing");
  const std::string missing = pull_error(parse_pull_spec("acme/tiny/nope.gguf"), o);
  EXPECT_NE(missing.find("404"), std::string::npos) << missing;
  o.endpoint = "http://127.0.0.1:1";  // nothing listens there
  const std::string unreachable = pull_error(parse_pull_spec("acme/tiny/tiny-f32.gguf"), o);
  EXPECT_NE(unreachable.find("cannot reach"), std::string::npos) << unreachable;
  fs::remove_all(o.model_dir);
}

}  // namespace
}  // namespace hearth::download
