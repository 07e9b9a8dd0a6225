#include "kube/http_transport.h"

#include <curl/curl.h>

#include <fstream>
#include <iterator>
#include <mutex>

namespace vgpu::kube {

namespace {

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct SlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};
using Slist = std::unique_ptr<curl_slist, SlistDeleter>;

curl_blob Blob(const std::string& s) {
  return curl_blob{const_cast<char*>(s.data()), s.size(), CURL_BLOB_NOCOPY};
}

}  // namespace

struct HttpTransport::Handle {
  CURL* easy = nullptr;
  Slist headers;
  std::string body;  // request body, kept alive during the transfer
  HttpResponse response;
  const std::function<bool(std::string_view)>* on_data = nullptr;
  bool aborted_by_callback = false;
  char errbuf[CURL_ERROR_SIZE] = {0};

  Handle() : easy(curl_easy_init()) {}
  ~Handle() {
    if (easy) curl_easy_cleanup(easy);
  }
};

void StreamCancel::Cancel() {
  std::lock_guard lock(mu_);
  cancelled_ = true;
  if (multi_) curl_multi_wakeup(static_cast<CURLM*>(multi_));
}

HttpTransport::HttpTransport(ClientConfig config) : config_(std::move(config)) {
  GlobalInit();
}

HttpTransport::~HttpTransport() = default;

std::unique_ptr<HttpTransport::Handle> HttpTransport::AcquireHandle() {
  {
    std::lock_guard lock(pool_mu_);
    if (!idle_.empty()) {
      auto h = std::move(idle_.back());
      idle_.pop_back();
      return h;
    }
  }
  return std::make_unique<Handle>();
}

void HttpTransport::ReleaseHandle(std::unique_ptr<Handle> h) {
  curl_easy_reset(h->easy);  // keeps the connection cache
  h->headers.reset();
  h->body.clear();
  h->response = {};
  h->on_data = nullptr;
  h->aborted_by_callback = false;
  std::lock_guard lock(pool_mu_);
  if (idle_.size() < config_.max_idle_connections) idle_.push_back(std::move(h));
}

Result<std::string> HttpTransport::AuthHeader() {
  if (config_.token_file.empty()) {
    return config_.bearer_token.empty() ? std::string()
                                        : "Authorization: Bearer " + config_.bearer_token;
  }
  std::lock_guard lock(token_mu_);
  struct stat st {};
  if (stat(config_.token_file.c_str(), &st) != 0) {
    if (!cached_token_.empty()) return "Authorization: Bearer " + cached_token_;
    return Unavailable("cannot read token file " + config_.token_file);
  }
  // Re-read when the file changed (kubelet rotates projected tokens by replacing the file).
  if (st.st_mtim.tv_sec != token_mtime_.tv_sec || st.st_mtim.tv_nsec != token_mtime_.tv_nsec ||
      st.st_size != token_size_) {
    std::ifstream in(config_.token_file, std::ios::binary);
    if (in) {
      std::string token((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      while (!token.empty() &&
             (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) {
        token.pop_back();
      }
      cached_token_ = token;
      token_mtime_ = st.st_mtim;
      token_size_ = st.st_size;
    }
  }
  if (cached_token_.empty()) return std::string();
  return "Authorization: Bearer " + cached_token_;
}

Status HttpTransport::Prepare(Handle& h, const HttpRequest& req, bool streaming) {
  CURL* e = h.easy;
  std::string url = config_.server + req.path;
  curl_easy_setopt(e, CURLOPT_URL, url.c_str());
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, h.errbuf);
  curl_easy_setopt(e, CURLOPT_USERAGENT, config_.user_agent.c_str());
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(config_.connect_timeout.count()));
  if (!streaming)
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(config_.request_timeout.count()));
  curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
  if (req.method == "GET") {
    curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
  } else {
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, req.method.c_str());
    h.body = req.body;
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, h.body.data());
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(h.body.size()));
  }
  curl_slist* list = nullptr;
  list = curl_slist_append(list, "Accept: application/json");
  if (!req.content_type.empty())
    list = curl_slist_append(list, ("Content-Type: " + req.content_type).c_str());
  list = curl_slist_append(list, "Expect:");  // no 100-continue round trip
  auto auth = AuthHeader();
  if (!auth.ok()) {
    curl_slist_free_all(list);
    return auth.status();
  }
  if (!auth->empty()) list = curl_slist_append(list, auth->c_str());
  h.headers.reset(list);
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, list);
  if (config_.insecure_skip_tls_verify) {
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  if (!config_.ca_pem.empty()) {
    curl_blob b = Blob(config_.ca_pem);
    curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &b);
  }
  if (!config_.client_cert_pem.empty()) {
    curl_blob cert = Blob(config_.client_cert_pem);
    curl_blob key = Blob(config_.client_key_pem);
    curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &cert);
    curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
    curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &key);
    curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
  }
  curl_easy_setopt(e, CURLOPT_WRITEDATA, &h);
  curl_easy_setopt(
      e, CURLOPT_WRITEFUNCTION, +[](char* data, size_t size, size_t n, void* user) -> size_t {
        auto* h = static_cast<Handle*>(user);
        size_t len = size * n;
        if (h->on_data) {
          long code = 0;
          curl_easy_getinfo(h->easy, CURLINFO_RESPONSE_CODE, &code);
          if (code >= 200 && code < 300) {
            if (!(*h->on_data)(std::string_view(data, len))) {
              h->aborted_by_callback = true;
              return 0;  // aborts the transfer
            }
            return len;
          }
        }
        h->response.body.append(data, len);
        return len;
      });
  return Status::Ok();
}

namespace {

Status TransportError(CURLcode rc, const char* errbuf, const HttpRequest& req,
                      const std::string& server) {
  std::string detail = errbuf[0] ? errbuf : curl_easy_strerror(rc);
  std::string msg = req.method + " " + server + req.path + ": " + detail;
  if (rc == CURLE_OPERATION_TIMEDOUT) return DeadlineExceeded(msg);
  return Unavailable(msg);
}

}  // namespace

Result<HttpResponse> HttpTransport::Do(const HttpRequest& req) {
  auto h = AcquireHandle();
  if (!h->easy) return Internal("curl_easy_init failed");
  VGPU_RETURN_IF_ERROR(Prepare(*h, req, /*streaming=*/false));
  CURLcode rc = curl_easy_perform(h->easy);
  if (rc != CURLE_OK) {
    Status s = TransportError(rc, h->errbuf, req, config_.server);
    ReleaseHandle(std::move(h));
    return s;
  }
  curl_easy_getinfo(h->easy, CURLINFO_RESPONSE_CODE, &h->response.code);
  HttpResponse out = std::move(h->response);
  ReleaseHandle(std::move(h));
  return out;
}

Result<HttpResponse> HttpTransport::Stream(const HttpRequest& req,
                                           const std::function<bool(std::string_view)>& on_data,
                                           StreamCancel& cancel) {
  // A fresh handle: a watch holds its connection for minutes and must not return it half-read.
  Handle h;
  if (!h.easy) return Internal("curl_easy_init failed");
  VGPU_RETURN_IF_ERROR(Prepare(h, req, /*streaming=*/true));
  h.on_data = &on_data;
  CURLM* multi = curl_multi_init();
  if (!multi) return Internal("curl_multi_init failed");
  curl_multi_add_handle(multi, h.easy);
  {
    std::lock_guard lock(cancel.mu_);
    cancel.multi_ = multi;
  }
  CURLcode result = CURLE_OK;
  bool done = false;
  while (!done && !cancel.cancelled()) {
    int running = 0;
    if (curl_multi_perform(multi, &running) != CURLM_OK) {
      result = CURLE_RECV_ERROR;
      break;
    }
    int queued = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi, &queued)) {
      if (msg->msg == CURLMSG_DONE) {
        result = msg->data.result;
        done = true;
      }
    }
    if (done || running == 0) break;
    curl_multi_poll(multi, nullptr, 0, 1000, nullptr);
  }
  {
    std::lock_guard lock(cancel.mu_);
    cancel.multi_ = nullptr;
  }
  curl_easy_getinfo(h.easy, CURLINFO_RESPONSE_CODE, &h.response.code);
  curl_multi_remove_handle(multi, h.easy);
  curl_multi_cleanup(multi);
  if (cancel.cancelled() || h.aborted_by_callback) return std::move(h.response);
  if (result != CURLE_OK) return TransportError(result, h.errbuf, req, config_.server);
  return std::move(h.response);
}

}  // namespace vgpu::kube
