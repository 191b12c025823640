// Telling that an HTTP client has gone while nothing is being written to it (a request still
// in prefill, or a non-streamed reply). cpp-httplib 0.11 gives handlers no socket, so the
// server-side socket is found by the request's peer address among this process's sockets.
#pragma once

#include <string>

namespace hearth::server {

class ClientWatch {
 public:
  // Finds the connected socket whose peer is remote_addr:remote_port and whose local port is
  // local_port; when none is found, gone() stays false (nothing is cancelled by mistake).
  ClientWatch(const std::string& remote_addr, int remote_port, int local_port);
  // True once the peer has closed or reset the connection (bytes it sent are left unread).
  bool gone() const;
  bool watching() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

}  // namespace hearth::server
