#include "net/http_request_parser.h"

#include <algorithm>
#include <limits>

#include "core/base/strings.h"

namespace vgpu::net {
namespace {

constexpr std::string_view kTokenPunctuation = "!#$%&'*+-.^_`|~";

bool IsTokenChar(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         kTokenPunctuation.find(c) != std::string_view::npos;
}

bool IsToken(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), IsTokenChar);
}

// Control characters other than horizontal tab, and DEL.
bool HasControl(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return (u < 0x20 && c != '\t') || u == 0x7f;
  });
}

// `s` without HTTP's optional white space (RFC 9110 §5.6.3: spaces and tabs) at either end; not
// core/base's TrimSpace, which also takes line breaks.
std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// One line without its '\n' and an optional '\r' before it.
std::string_view StripEol(std::string_view line) {
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

// The end of the head (just past its blank line) in `in` from `from`, or npos.
size_t FindHeadEnd(std::string_view in, size_t from) {
  for (size_t i = in.find('\n', from); i != std::string_view::npos; i = in.find('\n', i + 1)) {
    if (i + 1 < in.size() && in[i + 1] == '\n') return i + 2;
    if (i + 2 < in.size() && in[i + 1] == '\r' && in[i + 2] == '\n') return i + 3;
  }
  return std::string_view::npos;
}

HeadParse Error(int status, std::string message) {
  HeadParse r;
  r.state = ParseState::kError;
  r.error = {status, std::move(message)};
  return r;
}

// Content-Length: digits only. Values too long for 64 bits read as the largest value, which is
// over every limit (413, not 400: the client asked for a size, a size we refuse).
bool ParseLength(std::string_view v, uint64_t& out) {
  if (v.empty() || !std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return false;
  }
  uint64_t n = 0;
  for (char c : v) {
    const auto digit = static_cast<uint64_t>(c - '0');
    if (n > (std::numeric_limits<uint64_t>::max() - digit) / 10) {
      out = std::numeric_limits<uint64_t>::max();
      return true;
    }
    n = n * 10 + digit;
  }
  out = n;
  return true;
}

HeadParse ParseRequestLine(std::string_view line, HeadParse r) {
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    return Error(400, "malformed request line (want: METHOD /path HTTP/1.1)");
  }
  const std::string_view method = line.substr(0, sp1);
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (!IsToken(method)) return Error(400, "malformed request method");
  if (target.empty() || target.front() != '/' || HasControl(target)) {
    return Error(400, "the request target must be a path starting with /");
  }
  if (version.size() != 8 || version.substr(0, 5) != "HTTP/" || version[6] != '.' ||
      version[5] < '0' || version[5] > '9' || version[7] < '0' || version[7] > '9') {
    return Error(400, "malformed HTTP version in the request line");
  }
  if (version[5] != '1' || (version[7] != '0' && version[7] != '1')) {
    return Error(505, "only HTTP/1.0 and HTTP/1.1 are served here");
  }
  r.head.method = std::string(method);
  const size_t q = target.find('?');
  r.head.path = std::string(target.substr(0, q));
  if (q != std::string_view::npos) r.head.query = std::string(target.substr(q + 1));
  r.head.minor_version = version[7] - '0';
  return r;
}

}  // namespace

HeadParse ParseRequestHead(std::string_view in, size_t max_head_bytes) {
  size_t start = 0;
  while (start < in.size() && (in[start] == '\r' || in[start] == '\n')) ++start;
  const size_t end = FindHeadEnd(in, start);
  if (end == std::string_view::npos || end > max_head_bytes) {
    if (end == std::string_view::npos && in.size() <= max_head_bytes) return {};
    return Error(431, "request line and headers over " + std::to_string(max_head_bytes) + " bytes");
  }
  HeadParse r;
  size_t pos = start;
  bool first = true;
  bool have_length = false;
  bool close = false;
  bool keep_alive_token = false;
  while (pos < end) {
    const size_t nl = in.find('\n', pos);
    const std::string_view line = StripEol(in.substr(pos, nl + 1 - pos));
    pos = nl + 1;
    if (line.empty()) break;  // the blank line that ends the head
    if (line.find('\r') != std::string_view::npos) return Error(400, "stray CR in the head");
    if (first) {
      first = false;
      r = ParseRequestLine(line, std::move(r));
      if (r.state == ParseState::kError) return r;
      continue;
    }
    if (line.front() == ' ' || line.front() == '\t') {
      return Error(400, "folded header lines are not accepted");
    }
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || !IsToken(line.substr(0, colon))) {
      return Error(400, "malformed header line (want: Name: value)");
    }
    const std::string_view value = TrimOws(line.substr(colon + 1));
    if (HasControl(value)) return Error(400, "control character in a header value");
    std::string name = Lower(line.substr(0, colon));
    if (name == "content-length") {
      uint64_t n = 0;
      if (!ParseLength(value, n)) return Error(400, "Content-Length is not a number");
      if (have_length && n != r.head.content_length) {
        return Error(400, "differing Content-Length headers");
      }
      have_length = true;
      r.head.content_length = n;
    } else if (name == "transfer-encoding") {
      if (Lower(value) != "chunked") {
        return Error(
            501, "transfer coding \"" + std::string(value) + "\" is not supported (only chunked)");
      }
      r.head.chunked = true;
    } else if (name == "connection") {
      std::string_view rest = value;
      while (!rest.empty()) {
        const size_t comma = rest.find(',');
        const std::string token = Lower(TrimOws(rest.substr(0, comma)));
        close = close || token == "close";
        keep_alive_token = keep_alive_token || token == "keep-alive";
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      }
    } else if (name == "expect") {
      if (Lower(value) != "100-continue") {
        return Error(417, "unsupported expectation \"" + std::string(value) + "\"");
      }
      r.head.expect_continue = true;
    }
    r.head.headers.emplace_back(std::move(name), std::string(value));
  }
  if (r.head.chunked && have_length) {
    return Error(400, "both Content-Length and Transfer-Encoding: chunked");
  }
  if (r.head.chunked && r.head.minor_version == 0) {
    return Error(400, "Transfer-Encoding in an HTTP/1.0 request");
  }
  r.head.keep_alive = !close && (r.head.minor_version == 1 || keep_alive_token);
  r.state = ParseState::kDone;
  r.head_bytes = end;
  return r;
}

ChunkedBodyDecoder::ChunkedBodyDecoder(size_t max_body_bytes, size_t max_line_bytes)
    : max_body_(max_body_bytes), max_line_(max_line_bytes) {}

ParseState ChunkedBodyDecoder::Fail(int status, std::string message) {
  error_ = {status, std::move(message)};
  return ParseState::kError;
}

ParseState ChunkedBodyDecoder::Feed(std::string_view in, size_t& consumed, std::string& body) {
  consumed = 0;
  if (!error_.message.empty()) return ParseState::kError;
  while (step_ != Step::kDone && consumed < in.size()) {
    if (step_ == Step::kData) {
      const size_t take = static_cast<size_t>(std::min<uint64_t>(left_, in.size() - consumed));
      body.append(in.substr(consumed, take));
      consumed += take;
      left_ -= take;
      if (left_ == 0) step_ = Step::kDataEnd;
      continue;
    }
    // A line: a chunk's size, the end of a chunk's data, or a trailer.
    const size_t nl = in.find('\n', consumed);
    const size_t take = (nl == std::string_view::npos ? in.size() : nl + 1) - consumed;
    const size_t room = step_ == Step::kDataEnd ? 2
                        : step_ == Step::kSize  ? max_line_
                                                : max_line_ - std::min(max_line_, trailers_);
    if (line_.size() + take > room) {
      if (step_ == Step::kDataEnd) return Fail(400, "chunk data longer than its size");
      if (step_ == Step::kSize) return Fail(400, "chunk size line too long");
      return Fail(431, "chunked trailers over " + std::to_string(max_line_) + " bytes");
    }
    line_.append(in.substr(consumed, take));
    consumed += take;
    if (nl == std::string_view::npos) return ParseState::kNeedMore;
    const std::string_view line = StripEol(line_);
    if (step_ == Step::kDataEnd) {
      if (!line.empty()) return Fail(400, "chunk data longer than its size");
      step_ = Step::kSize;
    } else if (step_ == Step::kTrailer) {
      trailers_ += line_.size();
      if (line.empty()) step_ = Step::kDone;
    } else {
      const size_t digits = std::min(line.find_first_not_of("0123456789abcdefABCDEF"), line.size());
      const std::string_view rest = line.substr(digits);
      if (digits == 0 ||
          (!rest.empty() && rest.front() != ';' && rest.front() != ' ' && rest.front() != '\t')) {
        return Fail(400, "malformed chunk size");
      }
      const size_t room_left = max_body_ - std::min(max_body_, body.size());
      uint64_t size = 0;
      for (size_t i = 0; i < digits && size <= room_left; ++i) {
        const char c = line[i];
        const int v = c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
        size = size * 16 + static_cast<uint64_t>(v);
      }
      if (size > room_left) {
        return Fail(
            413, "chunked request body over the limit of " + std::to_string(max_body_) + " bytes");
      }
      left_ = size;
      step_ = size == 0 ? Step::kTrailer : Step::kData;
    }
    line_.clear();
  }
  return step_ == Step::kDone ? ParseState::kDone : ParseState::kNeedMore;
}

}  // namespace vgpu::net
