// libFuzzer target: the chunked request-body decoder (server/chunked_body.h). Any bytes must give
// a decoded body within the size limit or a 400/413, never a crash or a hang, and a body it
// accepts must be what the chunks carried (re-encoded and decoded again, the same bytes).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "server/chunked_body.h"

namespace {

// The bytes as a stream that never blocks: reads end where the input does.
class BytesStream final : public httplib::Stream {
 public:
  explicit BytesStream(std::string bytes) : bytes_(std::move(bytes)) {}
  bool is_readable() const override { return at_ < bytes_.size(); }
  bool is_writable() const override { return false; }
  ssize_t read(char* ptr, size_t size) override {
    const size_t n = std::min(size, bytes_.size() - at_);
    std::memcpy(ptr, bytes_.data() + at_, n);
    at_ += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char*, size_t) override { return -1; }
  void get_remote_ip_and_port(std::string&, int&) const override {}
  void get_local_ip_and_port(std::string&, int&) const override {}
  socket_t socket() const override { return INVALID_SOCKET; }

 private:
  std::string bytes_;
  size_t at_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr size_t kMaxBody = 4096;
  BytesStream in(std::string(reinterpret_cast<const char*>(data), size));
  const hearth::server::ChunkedBody got = hearth::server::read_chunked_body(in, kMaxBody);
  if (got.status != 0) {
    if (got.status != 400 && got.status != 413) std::abort();
    if (got.error.empty()) std::abort();
    return 0;
  }
  if (got.body.size() > kMaxBody) std::abort();
  // Round trip: one chunk of the decoded body, then the last chunk.
  char head[32];
  std::snprintf(head, sizeof head, "%zx\r\n", got.body.size());
  BytesStream again(got.body.empty() ? std::string("0\r\n\r\n")
                                     : head + got.body + "\r\n0\r\n\r\n");
  const hearth::server::ChunkedBody back = hearth::server::read_chunked_body(again, kMaxBody);
  if (back.status != 0 || back.body != got.body) std::abort();
  return 0;
}
