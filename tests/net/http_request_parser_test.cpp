#include "net/http_request_parser.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

namespace vgpu::net {
namespace {

constexpr size_t kMaxHead = 1024;

HeadParse Parse(const std::string& in) {
  return ParseRequestHead(in, kMaxHead);
}

TEST(ParseRequestHead, ARequestWithHeadersAndQuery) {
  const std::string in =
      "POST /filter?x=1 HTTP/1.1\r\nHost: a\r\nContent-Type:  application/json \r\n"
      "Content-Length: 12\r\nX-Odd-Case: V\r\n\r\n{\"body\":true}";
  const HeadParse p = Parse(in);
  ASSERT_EQ(p.state, ParseState::kDone) << p.error.message;
  EXPECT_EQ(p.head.method, "POST");
  EXPECT_EQ(p.head.path, "/filter");
  EXPECT_EQ(p.head.query, "x=1");
  EXPECT_EQ(p.head.content_length, 12u);
  EXPECT_FALSE(p.head.chunked);
  EXPECT_TRUE(p.head.keep_alive);
  EXPECT_EQ(in.substr(p.head_bytes), "{\"body\":true}");
  HttpRequest r;
  r.headers = p.head.headers;
  EXPECT_EQ(r.Header("content-type"), "application/json");
  EXPECT_EQ(r.Header("x-odd-case"), "V");
}

TEST(ParseRequestHead, WaitsForTheBlankLine) {
  for (const char* partial : {"", "GET", "GET / HTTP/1.1", "GET / HTTP/1.1\r\nHost: a\r\n",
                              "GET / HTTP/1.1\r\nHost: a\r\n\r"}) {
    EXPECT_EQ(Parse(partial).state, ParseState::kNeedMore) << partial;
  }
  // Bare LF line ends are read too, and empty lines before the request line are skipped.
  const HeadParse p = Parse("\r\n\nGET /healthz HTTP/1.1\nHost: a\n\n");
  ASSERT_EQ(p.state, ParseState::kDone) << p.error.message;
  EXPECT_EQ(p.head.path, "/healthz");
}

TEST(ParseRequestHead, KeepAliveByVersionAndConnectionHeader) {
  struct Case {
    const char* head;
    bool keep_alive;
  };
  const Case cases[] = {
      {"GET / HTTP/1.1\r\n\r\n", true},
      {"GET / HTTP/1.1\r\nConnection: close\r\n\r\n", false},
      {"GET / HTTP/1.1\r\nConnection: Upgrade, CLOSE\r\n\r\n", false},
      {"GET / HTTP/1.0\r\n\r\n", false},
      {"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", true},
  };
  for (const Case& c : cases) {
    const HeadParse p = Parse(c.head);
    ASSERT_EQ(p.state, ParseState::kDone) << c.head;
    EXPECT_EQ(p.head.keep_alive, c.keep_alive) << c.head;
  }
}

TEST(ParseRequestHead, RefusesWhatItCannotServeWithTheRightStatus) {
  struct Case {
    std::string head;
    int status;
    const char* says;
  };
  const Case cases[] = {
      {"GET /\r\n\r\n", 400, "malformed request line"},
      {"GET  / HTTP/1.1\r\n\r\n", 400, "malformed request line"},
      {"GET http://x/ HTTP/1.1\r\n\r\n", 400, "must be a path"},
      {"G(T / HTTP/1.1\r\n\r\n", 400, "method"},
      {"GET / HTTP/1.1x\r\n\r\n", 400, "HTTP version"},
      {"GET / HTTP/2.0\r\n\r\n", 505, "HTTP/1.0 and HTTP/1.1"},
      {"GET / HTTP/1.1\r\nHost a\r\n\r\n", 400, "malformed header line"},
      {"GET / HTTP/1.1\r\nHost : a\r\n\r\n", 400, "malformed header line"},
      {"GET / HTTP/1.1\r\nX: a\r\n b\r\n\r\n", 400, "folded"},
      {"GET / HTTP/1.1\r\nX: a\x01\r\n\r\n", 400, "control character"},
      {"GET / HTTP/1.1\r\nX: a\r\r\n\r\n", 400, "stray CR"},
      {"POST / HTTP/1.1\r\nContent-Length: 1x\r\n\r\n", 400, "not a number"},
      {"POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400, "not a number"},
      {"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400, "differing"},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501, "only chunked"},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", 400,
       "both Content-Length and Transfer-Encoding"},
      {"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "HTTP/1.0"},
      {"POST / HTTP/1.1\r\nExpect: something\r\n\r\n", 417, "expectation"},
      // Over the head limit, with and without its end in sight.
      {"GET / HTTP/1.1\r\nX: " + std::string(kMaxHead, 'a') + "\r\n\r\n", 431, "over 1024 bytes"},
      {"GET / HTTP/1.1\r\nX: " + std::string(kMaxHead, 'a'), 431, "over 1024 bytes"},
      {std::string(kMaxHead + 1, '\n'), 431, "over 1024 bytes"},
  };
  for (const Case& c : cases) {
    const HeadParse p = Parse(c.head);
    ASSERT_EQ(p.state, ParseState::kError) << c.head;
    EXPECT_EQ(p.error.status, c.status) << c.head;
    EXPECT_NE(p.error.message.find(c.says), std::string::npos) << c.head << ": " << p.error.message;
  }
}

TEST(ParseRequestHead, LengthsAndCodings) {
  HeadParse p = Parse("POST / HTTP/1.1\r\nContent-Length: 7\r\ncontent-length: 7\r\n\r\n");
  ASSERT_EQ(p.state, ParseState::kDone) << p.error.message;
  EXPECT_EQ(p.head.content_length, 7u);
  // A length past 64 bits is "too large" (the server's 413), not malformed.
  p = Parse("POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n");
  ASSERT_EQ(p.state, ParseState::kDone) << p.error.message;
  EXPECT_EQ(p.head.content_length, std::numeric_limits<uint64_t>::max());
  p = Parse("POST / HTTP/1.1\r\nTransfer-Encoding: Chunked\r\nExpect: 100-Continue\r\n\r\n");
  ASSERT_EQ(p.state, ParseState::kDone) << p.error.message;
  EXPECT_TRUE(p.head.chunked);
  EXPECT_TRUE(p.head.expect_continue);
  EXPECT_EQ(p.head.content_length, 0u);
}

ParseState FeedAll(ChunkedBodyDecoder& d, const std::string& in, std::string& body,
                   size_t& consumed) {
  return d.Feed(in, consumed, body);
}

TEST(ChunkedBodyDecoder, DecodesWholeOrByteByByte) {
  const std::string in =
      "4;ext=1\r\nWiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nTrailer: x\r\n\r\nNEXT";
  const std::string want = "Wikipedia in\r\n\r\nchunks.";
  {
    ChunkedBodyDecoder d(1024, 256);
    std::string body;
    size_t consumed = 0;
    ASSERT_EQ(FeedAll(d, in, body, consumed), ParseState::kDone) << d.error().message;
    EXPECT_EQ(body, want);
    EXPECT_EQ(in.substr(consumed), "NEXT");  // what follows the body is left alone
  }
  ChunkedBodyDecoder d(1024, 256);
  std::string body;
  ParseState s = ParseState::kNeedMore;
  size_t pos = 0;
  while (s == ParseState::kNeedMore && pos < in.size()) {
    size_t consumed = 0;
    s = d.Feed(std::string_view(in).substr(pos, 1), consumed, body);
    pos += consumed;
  }
  ASSERT_EQ(s, ParseState::kDone) << d.error().message;
  EXPECT_EQ(body, want);
  EXPECT_EQ(in.substr(pos), "NEXT");
}

TEST(ChunkedBodyDecoder, RefusesOversizedAndMalformedBodies) {
  struct Case {
    std::string in;
    int status;
    const char* says;
  };
  const Case cases[] = {
      {"11\r\n" + std::string(17, 'a') + "\r\n0\r\n\r\n", 413, "over the limit of 16 bytes"},
      {"8\r\naaaaaaaa\r\n9\r\naaaaaaaaa\r\n0\r\n\r\n", 413, "over the limit of 16 bytes"},
      {"ffffffffffffffffffffffff\r\n", 413, "over the limit"},
      {"x\r\n", 400, "malformed chunk size"},
      {"\r\n", 400, "malformed chunk size"},
      {"4x\r\n", 400, "malformed chunk size"},
      {"2\r\nabc\r\n", 400, "longer than its size"},
      {std::string(300, '0') + "1\r\n", 400, "size line too long"},
      {"0\r\nX: " + std::string(300, 'a') + "\r\n\r\n", 431, "trailers over"},
  };
  for (const Case& c : cases) {
    ChunkedBodyDecoder d(16, 256);
    std::string body;
    size_t consumed = 0;
    ASSERT_EQ(d.Feed(c.in, consumed, body), ParseState::kError) << c.in;
    EXPECT_EQ(d.error().status, c.status) << c.in;
    EXPECT_NE(d.error().message.find(c.says), std::string::npos)
        << c.in << ": " << d.error().message;
    EXPECT_LE(body.size(), 16u);
  }
}

}  // namespace
}  // namespace vgpu::net
