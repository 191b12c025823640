#include "server/connection_stream.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace hearth::server {

namespace {

using Clock = ConnectionStream::Clock;

constexpr size_t kReadChunk = 16 * 1024;

void address_of(const sockaddr_storage& a, std::string& ip, int& port) {
  char buf[INET6_ADDRSTRLEN] = {};
  port = -1;
  if (a.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(a);
    inet_ntop(AF_INET, &in.sin_addr, buf, sizeof buf);
    port = ntohs(in.sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(a);
    inet_ntop(AF_INET6, &in6.sin6_addr, buf, sizeof buf);
    port = ntohs(in6.sin6_port);
  }
  ip = buf;
}

}  // namespace

ConnectionStream::ConnectionStream(int fd, std::chrono::milliseconds write_timeout)
    : fd_(fd), write_timeout_(write_timeout) {}

bool ConnectionStream::poll_until(short events, Clock::time_point until) const {
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
    pollfd p{fd_, events, 0};
    // Rounded up so that a wait never ends early and spins at zero.
    const int n = ::poll(&p, 1, static_cast<int>(std::clamp<long long>(left + 1, 0, 1000)));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return false;
    if (Clock::now() >= until) return false;
  }
}

bool ConnectionStream::wait_for_request(std::chrono::milliseconds idle,
                                        const std::function<bool()>& stop) {
  if (off_ < buf_.size()) return true;
  const auto until = Clock::now() + idle;
  while (!stop()) {
    // Short slices, so that a server shutting down is noticed while a client idles.
    const auto slice = std::min(until, Clock::now() + std::chrono::milliseconds(50));
    if (poll_until(POLLIN, slice)) {
      char c;
      return ::recv(fd_, &c, 1, MSG_PEEK) > 0;  // 0: the peer closed between requests
    }
    if (Clock::now() >= until) return false;
  }
  return false;
}

void ConnectionStream::begin_request(Clock::time_point deadline) {
  deadline_ = deadline;
  budget_ = std::numeric_limits<size_t>::max();
}

void ConnectionStream::unread(std::string bytes) {
  budget_ = budget_ > std::numeric_limits<size_t>::max() - bytes.size()
                ? std::numeric_limits<size_t>::max()
                : budget_ + bytes.size();
  bytes.append(buf_, off_, std::string::npos);
  buf_ = std::move(bytes);
  off_ = 0;
}

bool ConnectionStream::is_readable() const {
  return off_ < buf_.size() || poll_until(POLLIN, deadline_);
}

ssize_t ConnectionStream::read(char* ptr, size_t size) {
  if (budget_ == 0) {
    over_budget_ = read_failed_ = true;
    return -1;
  }
  size = std::min(size, budget_);
  if (off_ >= buf_.size()) {
    if (!poll_until(POLLIN, deadline_)) {
      timed_out_ = Clock::now() >= deadline_;
      read_failed_ = true;
      return -1;
    }
    buf_.resize(kReadChunk);
    ssize_t n;
    do {
      n = ::recv(fd_, buf_.data(), buf_.size(), 0);
    } while (n < 0 && errno == EINTR);
    off_ = 0;
    buf_.resize(n > 0 ? static_cast<size_t>(n) : 0);
    // ACK at once while a request arrives: a client that writes its headers and its body
    // separately without TCP_NODELAY holds the body back until the headers are ACKed, and a
    // delayed ACK costs it 40 ms. (Quick-ACK mode does not last: set again after each read.)
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof one);
    if (n <= 0) {
      read_failed_ = true;
      return n;
    }
  }
  const size_t n = std::min(size, buf_.size() - off_);
  std::memcpy(ptr, buf_.data() + off_, n);
  off_ += n;
  budget_ -= n;
  return static_cast<ssize_t>(n);
}

bool ConnectionStream::peer_alive() const {
  char c;
  const ssize_t n = ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0) return true;
  if (n == 0) return false;  // the peer closed: nobody would read what is written
  return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
}

bool ConnectionStream::is_writable() const {
  return poll_until(POLLOUT, Clock::now() + write_timeout_) && peer_alive();
}

ssize_t ConnectionStream::write(const char* ptr, size_t size) {
  if (!is_writable()) return -1;
  ssize_t n;
  do {
    n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  return n;
}

void ConnectionStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (::getpeername(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) a.ss_family = AF_UNSPEC;
  address_of(a, ip, port);
}

void ConnectionStream::get_local_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) a.ss_family = AF_UNSPEC;
  address_of(a, ip, port);
}

}  // namespace hearth::server
