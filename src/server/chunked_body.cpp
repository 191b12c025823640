#include "server/chunked_body.h"

#include <fmt/format.h>

#include <charconv>
#include <string_view>

namespace hearth::server {

namespace {

constexpr size_t kMaxLine = 4096;          // a chunk-size line or one trailer field
constexpr size_t kMaxTrailerBytes = 8192;  // all trailer fields together

// One line without its CRLF (a bare LF is accepted); false on a read failure or an overlong line.
bool read_line(httplib::Stream& strm, std::string& line, size_t max_len) {
  line.clear();
  char c = 0;
  while (strm.read(&c, 1) == 1) {
    if (c == '\n') {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      return true;
    }
    if (line.size() >= max_len) return false;
    line.push_back(c);
  }
  return false;
}

bool read_exact(httplib::Stream& strm, std::string& out, size_t n) {
  const size_t start = out.size();
  out.resize(start + n);
  for (size_t got = 0; got < n;) {
    const ssize_t r = strm.read(out.data() + start + got, n - got);
    if (r <= 0) return false;
    got += static_cast<size_t>(r);
  }
  return true;
}

// chunk-size [ ";" chunk-ext ]: 1 to 16 hex digits, then optional whitespace and extensions.
bool chunk_size(std::string_view line, size_t& size) {
  const size_t digits = line.find_first_not_of("0123456789abcdefABCDEF");
  const std::string_view hex = line.substr(0, digits);
  if (hex.empty() || hex.size() > 16) return false;
  const std::string_view rest = digits == std::string_view::npos ? "" : line.substr(digits);
  const size_t ext = rest.find_first_not_of(" \t");
  if (ext != std::string_view::npos && rest[ext] != ';') return false;
  return std::from_chars(hex.data(), hex.data() + hex.size(), size, 16).ec == std::errc();
}

ChunkedBody refuse(int status, std::string why) {
  return {"", status, std::move(why)};
}

}  // namespace

ChunkedBody read_chunked_body(httplib::Stream& strm, size_t max_body) {
  ChunkedBody out;
  std::string line;
  for (;;) {
    if (!read_line(strm, line, kMaxLine)) return refuse(400, "a chunk-size line is missing");
    size_t size = 0;
    if (!chunk_size(line, size))
      return refuse(400, fmt::format("'{}' is not a chunk size", line.substr(0, 40)));
    if (size == 0) break;
    if (size > max_body - out.body.size())
      return refuse(413, fmt::format("the request body is larger than {} bytes", max_body));
    if (!read_exact(strm, out.body, size)) return refuse(400, "a chunk ends early");
    if (!read_line(strm, line, 2) || !line.empty())
      return refuse(400, "a chunk is not followed by CRLF");
  }
  // The trailer section: header fields until an empty line.
  size_t trailer_bytes = 0;
  for (;;) {
    if (!read_line(strm, line, kMaxLine)) return refuse(400, "the chunked body does not end");
    if (line.empty()) return out;
    trailer_bytes += line.size();
    if (trailer_bytes > kMaxTrailerBytes || line.find(':') == std::string::npos)
      return refuse(400, "malformed or oversized trailer fields");
  }
}

}  // namespace hearth::server
