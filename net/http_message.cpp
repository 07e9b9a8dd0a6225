#include "net/http_message.h"

#include "core/base/http_reason.h"

namespace vgpu::net {

std::string_view HttpRequest::Header(std::string_view lower_name) const {
  for (const auto& [name, value] : headers) {
    if (name == lower_name) return value;
  }
  return {};
}

HttpResponse HttpResponse::Text(int status, std::string line) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(line);
  r.body += '\n';
  return r;
}

const char* ReasonPhrase(int status) {
  return HttpReasonPhrase(status);
}

std::string SerializeResponse(const HttpResponse& response, bool close, bool head_only) {
  std::string out;
  out.reserve(128 + response.body.size());
  out += "HTTP/1.1 ";
  out += std::to_string(response.status);
  out += ' ';
  out += ReasonPhrase(response.status);
  out += "\r\n";
  if (!response.content_type.empty()) {
    out += "Content-Type: ";
    out += response.content_type;
    out += "\r\n";
  }
  out += "Content-Length: ";
  out += std::to_string(response.body.size());
  out += "\r\n";
  if (close) out += "Connection: close\r\n";
  for (const auto& [name, value] : response.headers) {
    out += name;
    out += ": ";
    out += value;
    out += "\r\n";
  }
  out += "\r\n";
  if (!head_only) out += response.body;
  return out;
}

}  // namespace vgpu::net
