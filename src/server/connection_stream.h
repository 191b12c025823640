// One client connection as cpp-httplib's Stream, kept for the connection's whole life.
//
// cpp-httplib 0.11 builds a new SocketStream per request, so bytes it read ahead (a pipelined
// second request) are dropped with it, and its read timeout applies to each read() alone, so a
// client trickling a byte every few seconds holds a worker forever. This stream keeps its
// read-ahead buffer across requests and reads a request (headers and body) against one deadline.
// Writes are not bounded by that deadline: a streamed reply may last minutes.
#pragma once

#include <httplib.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <limits>
#include <string>

namespace hearth::server {

class ConnectionStream final : public httplib::Stream {
 public:
  using Clock = std::chrono::steady_clock;

  ConnectionStream(int fd, std::chrono::milliseconds write_timeout);

  // Waits up to `idle` for the first byte of the next request (bytes already buffered count).
  // `stop` is asked every few ms: true ends the wait. False: nothing came, or the peer closed.
  bool wait_for_request(std::chrono::milliseconds idle, const std::function<bool()>& stop);
  // Starts reading a request: its bytes must all arrive by `deadline`.
  void begin_request(Clock::time_point deadline);
  // At most `bytes` more may be read for this request (a chunked body has no length up front).
  void limit_reading(size_t bytes) { budget_ = bytes; }
  // Puts `bytes` back in front of what is still to be read (a body decoded here, for httplib to
  // read as plain bytes); they are exempt from the reading budget.
  void unread(std::string bytes);

  bool read_timed_out() const { return timed_out_; }
  bool over_budget() const { return over_budget_; }
  // A read failed (timeout, budget, reset): what is left of the request is unknown, so the
  // connection cannot carry another request.
  bool read_failed() const { return read_failed_; }

  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  int socket() const override { return fd_; }

 private:
  bool poll_until(short events, Clock::time_point until) const;
  bool peer_alive() const;

  int fd_;
  std::chrono::milliseconds write_timeout_;
  Clock::time_point deadline_ = Clock::time_point::max();
  size_t budget_ = std::numeric_limits<size_t>::max();
  std::string buf_;
  size_t off_ = 0;  // buf_[off_..] is read from the socket but not yet by the parser
  bool timed_out_ = false;
  bool over_budget_ = false;
  bool read_failed_ = false;
};

}  // namespace hearth::server
