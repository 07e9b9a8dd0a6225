#pragma once

// libcurl underneath the client: pooled easy handles (keep-alive connections reused across
// calls), TLS from ClientConfig (PEM blobs, no temp files), bearer token re-read on change, and a
// cancellable streaming GET for watches. Internal to vgpu_kube.

#include <sys/stat.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"
#include "kube/config.h"

namespace vgpu::kube {

struct HttpRequest {
  std::string method = "GET";
  std::string path;  // "/api/v1/pods?labelSelector=..." (already escaped)
  std::string body;
  std::string content_type;
};

struct HttpResponse {
  long code = 0;
  std::string body;
};

// Cancels a running Stream() from another thread, promptly.
class StreamCancel {
 public:
  void Cancel();
  bool cancelled() const { return cancelled_.load(); }

 private:
  friend class HttpTransport;
  std::mutex mu_;
  void* multi_ = nullptr;  // CURLM* of the running stream
  std::atomic<bool> cancelled_{false};
};

class HttpTransport {
 public:
  explicit HttpTransport(ClientConfig config);
  ~HttpTransport();
  HttpTransport(const HttpTransport&) = delete;
  HttpTransport& operator=(const HttpTransport&) = delete;

  // A transport-level failure (connect, TLS, timeout) is an Unavailable/DeadlineExceeded Status;
  // any HTTP answer, including 4xx/5xx, is a response.
  Result<HttpResponse> Do(const HttpRequest& req);

  // GET streaming the body to `on_data` as it arrives (return false to stop). For non-2xx answers
  // the body is collected into the response instead. Returns when the server ends the stream, the
  // connection breaks (Unavailable), or `cancel` fires (response with what was seen).
  Result<HttpResponse> Stream(const HttpRequest& req,
                              const std::function<bool(std::string_view)>& on_data,
                              StreamCancel& cancel);

  const ClientConfig& config() const { return config_; }

 private:
  struct Handle;
  std::unique_ptr<Handle> AcquireHandle();
  void ReleaseHandle(std::unique_ptr<Handle> h);
  Result<std::string> AuthHeader();
  Status Prepare(Handle& h, const HttpRequest& req, bool streaming);

  ClientConfig config_;
  std::mutex pool_mu_;
  std::vector<std::unique_ptr<Handle>> idle_;
  std::mutex token_mu_;
  std::string cached_token_;
  struct timespec token_mtime_ = {0, 0};
  off_t token_size_ = -1;
};

}  // namespace vgpu::kube
