#pragma once

// Incremental parsing of HTTP/1.x requests as they arrive, within limits: the head (request line
// and headers) and a chunked body. Pure code over bytes (no sockets), so that every malformed or
// oversized shape is tested without a server. Errors carry the HTTP status to answer with and a
// one-line message for the client.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "net/http_message.h"

namespace vgpu::net {

enum class ParseState { kNeedMore, kDone, kError };

struct ParseError {
  int status = 400;
  std::string message;
};

struct RequestHead {
  std::string method;
  std::string path;
  std::string query;
  HttpHeaders headers;    // lower-case names
  int minor_version = 1;  // HTTP/1.<minor>
  bool chunked = false;
  uint64_t content_length = 0;  // 0 when chunked or absent
  bool keep_alive = true;
  bool expect_continue = false;
};

struct HeadParse {
  ParseState state = ParseState::kNeedMore;
  RequestHead head;
  size_t head_bytes = 0;  // kDone: bytes of `in` the head took (its blank line included)
  ParseError error;       // kError
};

// Parses the head at the start of `in`: kNeedMore until its blank line has arrived (an error
// when `in` is already over `max_head_bytes` without one), kDone with the head, or kError (400 for
// malformed shapes, 431 over the size, 501 for an unknown transfer coding, 505 for a version
// other than HTTP/1.0 and 1.1, 417 for an unknown expectation). Empty lines before the request
// line are skipped (RFC 9112 2.2). Strict where leniency lets two readers disagree on where a
// request ends: Content-Length with Transfer-Encoding, differing or malformed Content-Length
// values, folded header lines and spaces before a header's colon are refused.
HeadParse ParseRequestHead(std::string_view in, size_t max_head_bytes);

// A chunked body (RFC 9112 7.1) fed in pieces as they arrive. Chunk extensions are ignored,
// trailers read and dropped.
class ChunkedBodyDecoder {
 public:
  // Over `max_body_bytes` of data: 413. Size lines and trailers over `max_line_bytes`: 400/431.
  ChunkedBodyDecoder(size_t max_body_bytes, size_t max_line_bytes);

  // Consumes what it can of `in` (`consumed` bytes), appending chunk data to `body`; kDone once
  // the last chunk and the trailers are in (bytes after them are not consumed).
  ParseState Feed(std::string_view in, size_t& consumed, std::string& body);
  const ParseError& error() const { return error_; }

 private:
  enum class Step { kSize, kData, kDataEnd, kTrailer, kDone };
  ParseState Fail(int status, std::string message);

  size_t max_body_;
  size_t max_line_;
  Step step_ = Step::kSize;
  std::string line_;     // the size line or trailer line being read
  uint64_t left_ = 0;    // data bytes left in the current chunk
  size_t trailers_ = 0;  // trailer bytes so far
  ParseError error_;
};

}  // namespace vgpu::net
