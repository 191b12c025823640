#include "server/webui.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>
#include <string>

#include "server/server_impl.h"

namespace hearth::server {

namespace {

// The page runs only its own script and style, and talks to this server only; nothing may frame
// it (clickjacking) or submit forms anywhere. Inline scripts are refused, so text the page
// renders (model output as markdown) cannot execute even if it escapes the sanitizer.
constexpr const char* kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'";

std::string_view trim(std::string_view s) {
  const size_t begin = s.find_first_not_of(" \t");
  if (begin == std::string_view::npos) return {};
  return s.substr(begin, s.find_last_not_of(" \t") - begin + 1);
}

bool iequals(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) ==
           std::tolower(static_cast<unsigned char>(y));
  });
}

// Calls f(item) for each `sep`-separated item of `list`, trimmed.
template <typename F>
void for_each_item(std::string_view list, char sep, F f) {
  while (true) {
    const size_t end = list.find(sep);
    f(trim(list.substr(0, end)));
    if (end == std::string_view::npos) return;
    list.remove_prefix(end + 1);
  }
}

// The q of an Accept-Encoding entry from its parameters ("q=0.5"); 1 without one, 0 when it
// does not parse (a client that sent something odd gets the plain bytes, which always work).
double quality(std::string_view params) {
  double q = 1.0;
  for_each_item(params, ';', [&](std::string_view p) {
    if (p.size() < 2 || (p[0] != 'q' && p[0] != 'Q') || p[1] != '=') return;
    const std::string_view v = p.substr(2);
    if (std::from_chars(v.data(), v.data() + v.size(), q).ec != std::errc()) q = 0.0;
  });
  return q;
}

void set_page_headers(httplib::Response& res) {
  res.set_header("Content-Security-Policy", kContentSecurityPolicy);
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Referrer-Policy", "no-referrer");
  // Revalidated each time: a new binary serves a new page at the same paths.
  res.set_header("Cache-Control", "no-cache");
}

}  // namespace

bool is_webui_path(std::string_view path) {
  return path == "/" || path == "/index.html" || path.starts_with("/assets/");
}

const WebAsset* find_web_asset(std::span<const WebAsset> assets, std::string_view path) {
  if (path == "/index.html") path = "/";
  for (const WebAsset& a : assets)
    if (a.path == path) return &a;
  return nullptr;
}

bool accepts_gzip(std::string_view accept_encoding) {
  std::optional<bool> gzip, any;  // an explicit gzip entry outranks "*"
  for_each_item(accept_encoding, ',', [&](std::string_view entry) {
    const size_t semi = entry.find(';');
    const std::string_view coding = trim(entry.substr(0, semi));
    const bool ok = quality(semi == std::string_view::npos ? "" : entry.substr(semi + 1)) > 0;
    if (iequals(coding, "gzip") || iequals(coding, "x-gzip")) gzip = ok;
    if (coding == "*") any = ok;
  });
  return gzip.value_or(any.value_or(false));
}

void send_web_asset(const WebAsset& asset, const httplib::Request& req, httplib::Response& res) {
  const bool gzip = accepts_gzip(req.get_header_value("Accept-Encoding"));
  const std::span<const unsigned char> body = gzip ? asset.gzip : asset.plain;
  res.status = 200;
  set_page_headers(res);
  res.set_header("Vary", "Accept-Encoding");
  if (gzip) res.set_header("Content-Encoding", "gzip");
  const std::string mime(asset.mime);
  if (body.empty()) {  // a provider of length 0 would be asked for bytes forever
    res.set_content(std::string(), mime);
    return;
  }
  // A provider of fixed length, not set_content: httplib compresses a text body itself when the
  // client accepts gzip or br, which would encode the gzip bytes twice. It also writes straight
  // from the embedded bytes, without a copy per request.
  res.set_content_provider(
      body.size(), mime, [body](size_t offset, size_t length, httplib::DataSink& sink) {
        return sink.write(reinterpret_cast<const char*>(body.data()) + offset, length);
      });
}

void Server::Impl::handle_webui(const httplib::Request& req, httplib::Response& res) {
  const std::span<const WebAsset> assets = webui_assets();
  if (assets.empty())
    throw ApiError(404,
                   "the web UI was not built into this binary (building it needs node and npm "
                   "at build time; see HEARTH_WEBUI in cmake/webui.cmake)",
                   "invalid_request_error", "path", "webui_not_built");
  const WebAsset* asset = find_web_asset(assets, req.path);
  if (!asset) throw httplib_error(req, 404);
  send_web_asset(*asset, req, res);
}

void Server::Impl::add_webui_routes() {
  for (const char* pattern : {"/", "/index.html", "/assets/.*"})
    http.Get(pattern, guarded(&Impl::handle_webui));
}

}  // namespace hearth::server
