#include "server/http_server.h"

#include <fmt/format.h>

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "server/chunked_body.h"
#include "server/connection_stream.h"

namespace hearth::server {

namespace {

// What the handlers of the request being served on this thread may ask about its connection.
// A connection is served start to end on one worker thread, handlers included.
struct RequestContext {
  const ConnectionStream* stream = nullptr;
  std::optional<EarlyRefusal> refusal;
  bool close_after = false;  // the handler asked for the connection to end with its reply
};
thread_local RequestContext* tl_request = nullptr;

bool reads_body(const std::string& method) {
  return method == "POST" || method == "PUT" || method == "PATCH" || method == "DELETE" ||
         method == "PRI";
}

// A chunked body is decoded here (server/chunked_body.h) and handed to httplib as a body of
// known length: the decoded bytes go back in front of the stream's buffer.
std::optional<EarlyRefusal> decode_chunked(httplib::Request& req, size_t max_body,
                                           ConnectionStream& strm) {
  ChunkedBody decoded = read_chunked_body(strm, max_body);
  if (strm.read_timed_out())
    return EarlyRefusal{408, "request_timeout", "the request body did not arrive in time", "body"};
  if (decoded.status != 0)
    return EarlyRefusal{decoded.status,
                        decoded.status == 413 ? "request_too_large" : "invalid_chunked_body",
                        decoded.error, "body"};
  req.headers.erase("Transfer-Encoding");
  req.set_header("Content-Length", std::to_string(decoded.body.size()));
  strm.unread(std::move(decoded.body));
  return std::nullopt;
}

bool all_digits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

// Checks the framing headers before httplib reads a body by them. cpp-httplib 0.11 reads
// "Content-Length: -5" as 2^64-5 and then tries to skip that many bytes; two lengths, or a
// length beside Transfer-Encoding, are how requests are smuggled past proxies.
std::optional<EarlyRefusal> vet_framing(httplib::Request& req, size_t max_body,
                                        ConnectionStream& strm) {
  const auto lengths = req.headers.equal_range("Content-Length");
  const bool chunked = req.has_header("Transfer-Encoding");
  if (chunked) {
    if (lengths.first != lengths.second)
      return EarlyRefusal{400, "invalid_content_length",
                          "a request may not have both Content-Length and Transfer-Encoding",
                          "Content-Length"};
    if (req.get_header_value_count("Transfer-Encoding") != 1 ||
        strcasecmp(req.get_header_value("Transfer-Encoding").c_str(), "chunked") != 0)
      return EarlyRefusal{400, "invalid_transfer_encoding",
                          "only 'Transfer-Encoding: chunked' is supported", "Transfer-Encoding"};
    // The size is known only once read: cap what may be read (body and chunk framing).
    strm.limit_reading(max_body + max_body / 8 + 64 * 1024);
    if (reads_body(req.method)) return decode_chunked(req, max_body, strm);
    return std::nullopt;
  }
  if (lengths.first == lengths.second) {
    // HTTP/1.1: a request with neither header has no body; httplib 0.11 would read a POST's
    // "body" until the client closes.
    req.set_header("Content-Length", "0");
    return std::nullopt;
  }
  const std::string value = lengths.first->second;
  for (auto it = lengths.first; it != lengths.second; ++it)
    if (it->second != value)
      return EarlyRefusal{400, "invalid_content_length", "conflicting Content-Length headers",
                          "Content-Length"};
  if (!all_digits(value))
    return EarlyRefusal{400, "invalid_content_length",
                        fmt::format("Content-Length '{}' is not a byte count", value.substr(0, 40)),
                        "Content-Length"};
  if (value.size() > 18 || std::stoull(value) > max_body)
    return EarlyRefusal{413, "request_too_large",
                        fmt::format("the request body is larger than {} bytes", max_body),
                        "Content-Length"};
  return std::nullopt;
}

void exclusive_socket_options(socket_t fd) {
  // SO_REUSEADDR lets a restarted server bind while old connections linger in TIME_WAIT; it does
  // not let two servers listen on one port. SO_REUSEPORT (httplib's default) would.
  int yes = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
}

}  // namespace

HttpServer::HttpServer(ConnectionLimits limits) : limits_(limits) {
  set_socket_options(exclusive_socket_options);
  set_payload_max_length(limits_.max_body);
}

void HttpServer::close_listener() {
  const socket_t s = svr_sock_.exchange(INVALID_SOCKET);
  if (s == INVALID_SOCKET) return;
  ::shutdown(s, SHUT_RDWR);  // wakes a thread blocked in accept()
  ::close(s);
}

void HttpServer::raise_backlog(int backlog) {
  const socket_t s = svr_sock_;
  if (s != INVALID_SOCKET) ::listen(s, backlog);
}

std::optional<EarlyRefusal> HttpServer::current_refusal() {
  return tl_request ? tl_request->refusal : std::nullopt;
}

bool HttpServer::current_read_timed_out() {
  return tl_request && tl_request->stream && tl_request->stream->read_timed_out();
}

bool HttpServer::current_read_over_budget() {
  return tl_request && tl_request->stream && tl_request->stream->over_budget();
}

void HttpServer::close_after_reply(httplib::Response& res) {
  res.set_header("Connection", "close");
  if (tl_request) tl_request->close_after = true;
}

bool HttpServer::process_and_close_socket(socket_t sock) {
  // A reply goes out as several writes (headers, then the body or each chunk). With Nagle's
  // algorithm a write waits for the ACK of the one before, and a client delays its ACK by up to
  // 40 ms: on a kept-alive connection every small reply would wait that long.
  int one = 1;
  ::setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  ConnectionStream strm(sock, limits_.write_timeout);
  RequestContext ctx;
  ctx.stream = &strm;
  tl_request = &ctx;
  bool ok = true;
  try {
    serve_connection(strm);
  } catch (...) {
    ok = false;  // a handler's exception escaped httplib: drop the connection, keep the worker
  }
  tl_request = nullptr;
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return ok;
}

void HttpServer::serve_connection(ConnectionStream& strm) {
  RequestContext& ctx = *tl_request;
  const auto stopping = [this] { return svr_sock_ == INVALID_SOCKET; };
  for (size_t served = 0; served < limits_.max_requests; ++served) {
    if (!strm.wait_for_request(limits_.keep_alive, stopping)) return;
    strm.begin_request(ConnectionStream::Clock::now() + limits_.read_timeout);
    ctx.refusal.reset();
    ctx.close_after = false;
    const bool last = served + 1 == limits_.max_requests || stopping();
    bool closed = false;
    bool unread_body = false;
    const bool written = process_request(strm, last, closed, [&](httplib::Request& req) {
      ctx.refusal = vet_framing(req, limits_.max_body, strm);
      // httplib reads bodies of POST, PUT, PATCH and DELETE only; a GET's is left unread.
      unread_body =
          !ctx.refusal && !reads_body(req.method) &&
          (req.has_header("Transfer-Encoding") || req.get_header_value("Content-Length") != "0");
      if (ctx.refusal || unread_body) {
        // Its body is left unread, so nothing after it on the connection can be parsed.
        req.headers.erase("Connection");
        req.set_header("Connection", "close");
      }
    });
    if (!written || closed || ctx.refusal || unread_body || ctx.close_after || strm.read_failed())
      return;
  }
}

std::string HttpServer::bind_failure(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0)
    return fmt::format("cannot resolve '{}': {}", host, ::gai_strerror(rc));
  int err = 0;
  for (addrinfo* a = found; a && err != EADDRINUSE; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd < 0) continue;
    exclusive_socket_options(fd);
    err = ::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 1) == 0 ? 0 : errno;
    ::close(fd);
  }
  ::freeaddrinfo(found);
  switch (err) {
    case EADDRINUSE:
      return fmt::format(
          "address already in use: another process listens on {}:{} (choose another --port, or "
          "--port 0 for any free port)",
          host, port);
    case EADDRNOTAVAIL:
      return fmt::format("'{}' is not an address of this machine", host);
    case EACCES:
      return fmt::format("permission denied binding port {} (ports below 1024 need privileges)",
                         port);
    case 0:
      return "the port was busy a moment ago and is free now; try again";
    default:
      return std::strerror(err);
  }
}

}  // namespace hearth::server
