// HTTP/1.x requests as the project's listeners read them off a socket (net/http_request_parser.h,
// net/http_server.cpp): the head, then a chunked body. Properties: a head parsed lies within the
// input and the limit, has a path, and is not whole one byte earlier (the server dispatches as
// soon as it is); a chunked body decodes to the same bytes and state whether it arrives whole or
// in two pieces (the server gets it in pieces of any size), and never beyond its limit.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "net/http_request_parser.h"

namespace {

using vgpu::fuzz::Check;
using vgpu::net::ChunkedBodyDecoder;
using vgpu::net::ParseState;

constexpr size_t kMaxHead = 4096;
constexpr size_t kMaxBody = 4096;

struct Decoded {
  ParseState state;
  std::string body;
  size_t consumed = 0;
  int status = 0;
};

Decoded DecodeInPieces(std::string_view in, size_t split) {
  ChunkedBodyDecoder d(kMaxBody, kMaxHead);
  Decoded out;
  out.state = d.Feed(in.substr(0, split), out.consumed, out.body);
  if (out.state == ParseState::kNeedMore && split < in.size()) {
    Check(out.consumed == split, "a piece not consumed whole while more is needed");
    size_t more = 0;
    out.state = d.Feed(in.substr(split), more, out.body);
    out.consumed += more;
  }
  out.status = out.state == ParseState::kError ? d.error().status : 0;
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const vgpu::net::HeadParse p = vgpu::net::ParseRequestHead(in, kMaxHead);
  if (p.state == ParseState::kError) {
    Check(p.error.status >= 400 && p.error.status < 600 && !p.error.message.empty(),
          "an error without a 4xx/5xx status and a message", in);
    return 0;
  }
  if (p.state == ParseState::kNeedMore) {
    Check(in.size() <= kMaxHead, "waiting for more past the head limit", in);
    return 0;
  }
  Check(p.head_bytes <= in.size() && p.head_bytes <= kMaxHead, "head past the input or limit", in);
  Check(!p.head.path.empty() && p.head.path.front() == '/', "a path not starting with /", in);
  Check(!p.head.method.empty(), "no method", in);
  Check(!p.head.chunked || p.head.content_length == 0, "chunked with a length", in);
  Check(vgpu::net::ParseRequestHead(in.substr(0, p.head_bytes - 1), kMaxHead).state ==
            ParseState::kNeedMore,
        "a head whole one byte before its end", in);
  if (!p.head.chunked) return 0;
  const std::string_view body = in.substr(p.head_bytes);
  const Decoded whole = DecodeInPieces(body, body.size());
  const size_t split = body.empty() ? 0 : static_cast<uint8_t>(in.front()) % (body.size() + 1);
  const Decoded pieces = DecodeInPieces(body, split);
  Check(whole.body.size() <= kMaxBody, "a chunked body past its limit", in);
  Check(whole.state == pieces.state && whole.status == pieces.status,
        "the body's state depends on how it arrived", in);
  if (whole.state != ParseState::kError) {
    Check(whole.body == pieces.body && whole.consumed == pieces.consumed,
          "the body depends on how it arrived", in);
  }
  return 0;
}
