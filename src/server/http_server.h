// cpp-httplib's Server with the connection handling a public server needs and 0.11 lacks:
//  - one ConnectionStream per connection: pipelined requests are answered in order, and a
//    request's headers and body must arrive within the read timeout (a stalled client frees its
//    worker; a streamed reply is not bounded by it);
//  - Content-Length vetted before the body is read: malformed or negative is refused (400), over
//    the body limit is refused (413) without reading it; either closes the connection;
//  - an exclusive listening socket (no SO_REUSEPORT: a second server on the port fails to bind);
//  - close_listener(), which also works before listen_after_bind() has started (stop() does not).
#pragma once

#include <httplib.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

namespace hearth::server {

class ConnectionStream;

struct ConnectionLimits {
  std::chrono::milliseconds read_timeout{5000};     // a request's headers and body
  std::chrono::milliseconds keep_alive{5000};       // idle wait for a connection's next request
  std::chrono::milliseconds write_timeout{600000};  // one write's progress
  size_t max_requests = 100;                        // per connection
  size_t max_body = 8u << 20;
};

// A request refused before routing (its body unread); the route layer renders the reply.
struct EarlyRefusal {
  int status = 400;
  std::string code;  // invalid_content_length, request_too_large, invalid_chunked_body...
  std::string message;
  std::string param;  // the header (or "body") it concerns
};

class HttpServer final : public httplib::Server {
 public:
  explicit HttpServer(ConnectionLimits limits);

  // Closes the listening socket: listen_after_bind() returns (or returns at once when it has
  // not started yet). Idempotent.
  void close_listener();
  // cpp-httplib 0.11 listens with a backlog of 5: bursts of connections overflow it and some
  // clients see resets. listen() again on the bound socket raises it.
  void raise_backlog(int backlog);

  // For handlers, on the thread serving the request: a refusal decided from its headers (the
  // pre-routing handler must answer it), and whether reading its body timed out.
  static std::optional<EarlyRefusal> current_refusal();
  static bool current_read_timed_out();
  static bool current_read_over_budget();
  // Ends the connection once this reply is written (sends "Connection: close").
  static void close_after_reply(httplib::Response& res);

  // The reason a bind to host:port fails, as a user should read it (bind() gives no errno).
  static std::string bind_failure(const std::string& host, int port);

 private:
  bool process_and_close_socket(socket_t sock) override;
  void serve_connection(ConnectionStream& strm);

  ConnectionLimits limits_;
};

}  // namespace hearth::server
