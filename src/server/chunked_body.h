// A request body sent with `Transfer-Encoding: chunked`, decoded by hearth rather than by
// cpp-httplib: 0.11 refuses a body whose last chunk is followed by trailer fields, which
// HTTP/1.1 allows (RFC 9112 §7.1.2). Chunk extensions are ignored and trailer fields discarded,
// as a recipient may; the decoded body is then read by httplib as a body of known length.
#pragma once

#include <httplib.h>

#include <cstddef>
#include <string>

namespace hearth::server {

struct ChunkedBody {
  std::string body;   // decoded, when `status` is 0
  int status = 0;     // else the refusal: 400 (malformed) or 413 (larger than allowed)
  std::string error;  // its message
};

// Reads a chunked body from `strm` up to and including its last CRLF, at most `max_body`
// decoded bytes (a larger one is refused without reading it all).
ChunkedBody read_chunked_body(httplib::Stream& strm, size_t max_body);

}  // namespace hearth::server
