#pragma once

// Requests and answers of the project's HTTP listeners (net/http_server.h), and an answer's bytes
// on the wire.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vgpu::net {

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method;   // as sent: "GET", "POST"
  std::string path;     // the target up to '?'
  std::string query;    // after '?', undecoded
  HttpHeaders headers;  // names in lower case, values trimmed
  std::string body;
  std::string remote_addr;  // the peer's address: "10.0.0.7", "::1"

  // The first value of header `lower_name` ("" when absent).
  std::string_view Header(std::string_view lower_name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  HttpHeaders headers;  // more headers (Allow, Retry-After)

  // A plain-text answer of one line: what the client did wrong or must do.
  static HttpResponse Text(int status, std::string line);
};

// "Not Found" for 404; "" for codes without a phrase here.
const char* ReasonPhrase(int status);

// Status line, headers (Content-Type, Content-Length, Connection: close when `close`, then the
// response's own) and, unless `head_only` (a HEAD request), the body.
std::string SerializeResponse(const HttpResponse& response, bool close, bool head_only);

}  // namespace vgpu::net
