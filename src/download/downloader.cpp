#include "download/downloader.h"

#include <httplib.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "util/error.h"
#include "util/sha256.h"

namespace hearth::download {

namespace fs = std::filesystem;

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

bool safe_component(const std::string& s) {
  return !s.empty() && s != "." && s != ".." && s.find('\\') == std::string::npos &&
         s.find('\0') == std::string::npos;
}

// "scheme://host[:port]" and a path prefix.
struct Endpoint {
  std::string origin;
  std::string prefix;
};

Endpoint split_endpoint(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos ||
      (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0))
    fail("endpoint '{}' is not an http:// or https:// URL", url);
  const size_t slash = url.find('/', scheme + 3);
  if (slash == std::string::npos) return {url, ""};
  return {url.substr(0, slash), url.substr(slash)};
}

std::unique_ptr<httplib::Client> make_client(const Endpoint& ep, const PullOptions& o) {
  auto c = std::make_unique<httplib::Client>(ep.origin);
  c->set_follow_location(true);
  c->set_connection_timeout(o.connect_timeout_s, 0);
  c->set_read_timeout(60, 0);
  if (!o.token.empty()) c->set_bearer_token_auth(o.token);
  return c;
}

std::string unreachable(const Endpoint& ep, httplib::Error err) {
  return fmt::format("cannot reach {} ({})", ep.origin, httplib::to_string(err));
}

void terminal_progress(uint64_t done, uint64_t total) {
  const double mb = 1024.0 * 1024.0;
  if (total > 0) {
    const int width = 30;
    const int fill = static_cast<int>(static_cast<double>(width) * static_cast<double>(done) /
                                      static_cast<double>(total));
    std::fprintf(stderr, "\r[%-*s] %5.1f%% %8.1f / %.1f MiB", width,
                 std::string(static_cast<size_t>(std::min(fill, width)), '#').c_str(),
                 100.0 * static_cast<double>(done) / static_cast<double>(total),
                 static_cast<double>(done) / mb, static_cast<double>(total) / mb);
  } else {
    std::fprintf(stderr, "\r%8.1f MiB", static_cast<double>(done) / mb);
  }
  std::fflush(stderr);
}

std::string pick_gguf(const nlohmann::json& listing, const std::string& repo) {
  std::vector<std::string> ggufs;
  if (listing.contains("siblings") && listing["siblings"].is_array())
    for (const auto& s : listing["siblings"])
      if (s.is_object() && s.contains("rfilename") && s["rfilename"].is_string()) {
        std::string name = s["rfilename"].get<std::string>();
        if (name.size() > 5 && name.substr(name.size() - 5) == ".gguf") ggufs.push_back(name);
      }
  if (ggufs.empty()) fail("{} has no .gguf files; name one as {}/FILE.gguf", repo, repo);
  for (const char* pref : {"q4_k_m", "Q4_K_M", "q8_0", "Q8_0"})
    for (const std::string& g : ggufs)
      if (g.find(pref) != std::string::npos) return g;
  return ggufs.front();
}

}  // namespace

PullSpec parse_pull_spec(const std::string& text) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    const size_t slash = text.find('/', start);
    parts.push_back(
        text.substr(start, slash == std::string::npos ? std::string::npos : slash - start));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  if (parts.size() < 2)
    fail("'{}' is not a model reference: use OWNER/REPO or OWNER/REPO/FILE.gguf", text);
  for (const std::string& p : parts)
    if (!safe_component(p)) fail("'{}' is not a model reference: bad path component '{}'", text, p);
  PullSpec s;
  s.repo = parts[0] + "/" + parts[1];
  for (size_t i = 2; i < parts.size(); ++i) s.file += (i > 2 ? "/" : "") + parts[i];
  return s;
}

std::string model_dir() {
  if (std::string d = env("HEARTH_MODEL_DIR"); !d.empty()) return d;
  if (std::string d = env("XDG_CACHE_HOME"); !d.empty()) return d + "/hearth/models";
  if (std::string d = env("HOME"); !d.empty()) return d + "/.cache/hearth/models";
  return ".hearth-models";
}

std::string local_path(const PullSpec& spec, const std::string& dir) {
  return (fs::path(dir) / spec.repo / spec.file).string();
}

namespace {

// The file a repository offers when none is named: its one GGUF, or the preferred quantization.
std::string listed_gguf(httplib::Client& client, const Endpoint& ep, const std::string& repo) {
  auto r = client.Get(ep.prefix + "/api/models/" + repo);
  if (!r) fail("{}", unreachable(ep, r.error()));
  if (r->status != 200) fail("{}: listing {} failed: HTTP {}", ep.origin, repo, r->status);
  nlohmann::json listing;
  try {
    listing = nlohmann::json::parse(r->body);
  } catch (const std::exception&) {
    fail("{}: the listing of {} is not JSON", ep.origin, repo);
  }
  return pick_gguf(listing, repo);
}

// What the server says the file is: its size (0 when unknown) and SHA-256 (empty when unknown).
struct RemoteFile {
  uint64_t size = 0;
  std::string sha256;
};

RemoteFile describe(httplib::Client& client, const Endpoint& ep, const std::string& url,
                    const std::string& file, const std::string& expect_sha256) {
  auto head = client.Head(url);
  if (!head) fail("{}", unreachable(ep, head.error()));
  if (head->status == 401 || head->status == 403)
    fail("{}{}: HTTP {} (gated or private: set HF_TOKEN)", ep.origin, url, head->status);
  if (head->status != 200) fail("{}{}: HTTP {}", ep.origin, url, head->status);
  RemoteFile rf;
  for (const char* h : {"X-Linked-Size", "Content-Length"})
    if (head->has_header(h)) {
      rf.size = std::strtoull(head->get_header_value(h).c_str(), nullptr, 10);
      break;
    }
  rf.sha256 = expect_sha256;
  if (std::string etag = head->get_header_value("X-Linked-Etag"); !etag.empty()) {
    std::erase(etag, '"');
    if (etag.size() == 64 && etag.find_first_not_of("0123456789abcdef") == std::string::npos) {
      if (!rf.sha256.empty() && rf.sha256 != etag)
        fail("{}: the server's SHA-256 {} differs from the expected {}", file, etag, rf.sha256);
      rf.sha256 = etag;
    }
  }
  return rf;
}

void verify(const std::string& path, const RemoteFile& rf) {
  const uint64_t size = fs::file_size(path);
  if (rf.size > 0 && size != rf.size)
    fail("{}: size {} differs from the server's {}", path, size, rf.size);
  if (!rf.sha256.empty()) {
    const std::string got = sha256_file(path);
    if (got != rf.sha256) fail("{}: SHA-256 {} differs from the expected {}", path, got, rf.sha256);
  }
}

// Appends the rest of the file to `part` (resuming from its size with a Range request; a server
// that ignores the range sends it all, and the part starts over).
void download_rest(httplib::Client& client, const Endpoint& ep, const std::string& url,
                   const std::string& part, uint64_t total, const PullOptions& o) {
  const uint64_t have = fs::exists(part) ? fs::file_size(part) : 0;
  std::FILE* f = std::fopen(part.c_str(), have > 0 ? "ab" : "wb");
  if (!f) fail("{}: cannot write", part);
  httplib::Headers headers;
  if (have > 0) headers.emplace("Range", fmt::format("bytes={}-", have));
  bool write_failed = false;
  int status = 0;
  uint64_t done = have;
  auto r = client.Get(
      url, headers,
      [&](const httplib::Response& resp) {
        status = resp.status;
        if (have > 0 && resp.status == 200) {  // Range ignored: start over
          std::fclose(f);
          f = std::fopen(part.c_str(), "wb");
          done = 0;
          return f != nullptr;
        }
        return resp.status == 200 || resp.status == 206;
      },
      [&](const char* data, size_t n) {
        if (std::fwrite(data, 1, n, f) != n) {
          write_failed = true;
          return false;
        }
        done += n;
        if (o.progress) o.progress(done, total);
        return true;
      });
  if (f) std::fclose(f);
  if (o.progress && isatty(fileno(stderr))) std::fputc('\n', stderr);
  if (write_failed) fail("{}: write failed (disk full?)", part);
  if (!r)
    fail("{} (partial download kept in {}; run again to resume)", unreachable(ep, r.error()), part);
  if (status != 200 && status != 206) fail("{}{}: HTTP {}", ep.origin, url, status);
}

}  // namespace

std::string pull(const PullSpec& spec_in, PullOptions o) {
  PullSpec spec = spec_in;
  if (o.endpoint.empty()) o.endpoint = env("HF_ENDPOINT");
  if (o.endpoint.empty()) o.endpoint = "https://huggingface.co";
  if (o.model_dir.empty()) o.model_dir = model_dir();
  if (o.token.empty()) o.token = env("HF_TOKEN");
  if (!o.progress && isatty(fileno(stderr))) o.progress = terminal_progress;
  const Endpoint ep = split_endpoint(o.endpoint);
  auto client = make_client(ep, o);
  if (spec.file.empty()) spec.file = listed_gguf(*client, ep, spec.repo);

  const std::string dest = local_path(spec, o.model_dir);
  const std::string part = dest + ".part";
  const std::string url = ep.prefix + "/" + spec.repo + "/resolve/" + o.revision + "/" + spec.file;
  const RemoteFile rf = describe(*client, ep, url, spec.file, o.expect_sha256);
  if (fs::exists(dest) && rf.size > 0 && fs::file_size(dest) == rf.size) {
    verify(dest, rf);
    return dest;
  }

  fs::create_directories(fs::path(dest).parent_path());
  if (rf.size > 0 && fs::exists(part) && fs::file_size(part) > rf.size) fs::remove(part);
  if (rf.size == 0 || !fs::exists(part) || fs::file_size(part) < rf.size)
    download_rest(*client, ep, url, part, rf.size, o);
  try {
    verify(part, rf);
  } catch (const Error&) {
    fs::remove(part);  // a wrong file must not be resumed from
    throw;
  }
  fs::rename(part, dest);
  return dest;
}

std::string default_model_path() {
  if (std::string m = env("HEARTH_MODEL"); !m.empty()) return m;
  const PullSpec spec = parse_pull_spec(kDefaultModelSpec);
  const std::string dest = local_path(spec, model_dir());
  if (fs::exists(dest)) return dest;
  std::fprintf(stderr, "hearth: no -m given and HEARTH_MODEL unset: pulling the default model %s\n",
               kDefaultModelSpec);
  try {
    return pull(spec);
  } catch (const Error& e) {
    fail(
        "{}\nhearth serve needs a model: pass -m FILE.gguf or set HEARTH_MODEL (or run "
        "`hearth pull OWNER/REPO/FILE.gguf` when online)",
        e.what());
  }
}

}  // namespace hearth::download
