// The API server's error answers as the kube client reads them (kube/client.h StatusFromHttp:
// the body, a Status object parsed within codec::kKubeObjectJson, or anything else quoted).
// Input: two bytes of HTTP status (400-599), then the body. Property: an error status naming the
// request and the code, whatever the body.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_check.h"
#include "kube/client.h"
#include "kube/http_transport.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  vgpu::kube::HttpResponse response;
  response.code = 400 + (data[0] * 256 + data[1]) % 200;
  response.body.assign(reinterpret_cast<const char*>(data + 2), size - 2);
  const vgpu::Status s = vgpu::kube::StatusFromHttp("GET", "/api/v1/pods", response);
  vgpu::fuzz::Check(!s.ok(), "an HTTP error read as success", response.body);
  vgpu::fuzz::Check(
      s.message().rfind("GET /api/v1/pods: HTTP " + std::to_string(response.code), 0) == 0,
      "an error that does not name the request and code", s.message());
  return 0;
}
