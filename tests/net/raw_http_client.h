#pragma once

// A client socket for tests of HTTP listeners that need what an HTTP library will not do: send a
// head and no body, trickle, stay silent, open hundreds of connections, see when the server
// closes. Blocking, with a receive timeout so that a server that never answers fails the test
// instead of hanging it. Header-only.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <string>

namespace vgpu::net::testing {

// Descriptors this process may open: RLIMIT_NOFILE's soft limit, raised towards `want` as far as
// the hard limit lets it. Tests that hold thousands of connections scale to what they get.
inline size_t EnsureDescriptors(size_t want) {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return 0;
  if (lim.rlim_cur < want && lim.rlim_cur != RLIM_INFINITY) {
    rlimit raised = lim;
    raised.rlim_cur = lim.rlim_max == RLIM_INFINITY ? want : std::min<rlim_t>(want, lim.rlim_max);
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) lim = raised;
  }
  return lim.rlim_cur == RLIM_INFINITY ? want : static_cast<size_t>(lim.rlim_cur);
}

class RawHttpClient {
 public:
  // Connects to 127.0.0.1:port; connected() tells whether it worked. `source`: the client's own
  // address ("127.0.0.2": any of 127.0.0.0/8 is this host's), so that one test plays several
  // peers; null: the kernel's choice (127.0.0.1).
  explicit RawHttpClient(int port, int receive_timeout_s = 10, const char* source = nullptr) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return;
    timeval tv{receive_timeout_s, 0};
    (void)::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (source != nullptr) {
      sockaddr_in local{};
      local.sin_family = AF_INET;
      if (::inet_pton(AF_INET, source, &local.sin_addr) != 1 ||
          ::bind(fd_, reinterpret_cast<const sockaddr*>(&local), sizeof local) != 0) {
        ::close(fd_);
        fd_ = -1;
        return;
      }
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~RawHttpClient() {
    if (fd_ >= 0) ::close(fd_);
  }
  RawHttpClient(const RawHttpClient&) = delete;
  RawHttpClient& operator=(const RawHttpClient&) = delete;
  RawHttpClient(RawHttpClient&& o) noexcept : fd_(o.fd_), buffered_(std::move(o.buffered_)) {
    o.fd_ = -1;
  }

  bool connected() const { return fd_ >= 0; }

  // False when the server has closed or reset the connection.
  bool Send(const std::string& bytes) {
    size_t off = 0;
    while (off < bytes.size()) {
      const ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += static_cast<size_t>(n);
    }
    return true;
  }

  struct Response {
    int status = 0;  // 0: no answer (closed, or the receive timeout passed)
    std::string head;
    std::string body;
  };

  // One answer: head, then Content-Length bytes of body.
  Response Read() {
    Response r;
    size_t end = std::string::npos;
    while ((end = buffered_.find("\r\n\r\n")) == std::string::npos) {
      if (!Fill()) return r;
    }
    r.head = buffered_.substr(0, end + 4);
    buffered_.erase(0, end + 4);
    if (r.head.compare(0, 9, "HTTP/1.1 ") != 0) return r;
    size_t length = 0;
    const size_t at = r.head.find("Content-Length: ");
    if (at != std::string::npos) length = std::strtoul(r.head.c_str() + at + 16, nullptr, 10);
    while (buffered_.size() < length) {
      if (!Fill()) return r;
    }
    r.body = buffered_.substr(0, length);
    buffered_.erase(0, length);
    r.status = std::atoi(r.head.c_str() + 9);
    return r;
  }

  // True when the server closed the connection (end of stream or reset) before the receive
  // timeout; what arrived before that is dropped.
  bool WaitClosed() {
    char buf[4096];
    for (;;) {
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n == 0) return true;
      if (n < 0) return errno == ECONNRESET;
    }
  }

 private:
  bool Fill() {
    char buf[4096];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) return false;
    buffered_.append(buf, static_cast<size_t>(n));
    return true;
  }

  int fd_ = -1;
  std::string buffered_;
};

}  // namespace vgpu::net::testing
