#include "net/http_transport.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include <cerrno>

namespace vgpu::net {
namespace {

class Plain final : public Transport {
 public:
  explicit Plain(int fd) : fd_(fd) {}

  IoResult Handshake() override { return IoResult::kOk; }

  IoResult Read(char* buf, size_t cap, size_t& got) override {
    got = 0;
    for (;;) {
      const ssize_t n = ::recv(fd_, buf, cap, 0);
      if (n > 0) {
        got = static_cast<size_t>(n);
        return IoResult::kOk;
      }
      if (n == 0) return IoResult::kClosed;
      if (errno == EINTR) continue;
      blocked_on_ = EPOLLIN;
      return errno == EAGAIN || errno == EWOULDBLOCK ? IoResult::kWouldBlock : IoResult::kError;
    }
  }

  IoResult Write(const char* buf, size_t len, size_t& put) override {
    put = 0;
    for (;;) {
      // MSG_NOSIGNAL: a peer gone away is an error to handle here, not SIGPIPE for the process.
      const ssize_t n = ::send(fd_, buf, len, MSG_NOSIGNAL);
      if (n >= 0) {
        put = static_cast<size_t>(n);
        if (n > 0) return IoResult::kOk;
        blocked_on_ = EPOLLOUT;
        return IoResult::kWouldBlock;
      }
      if (errno == EINTR) continue;
      blocked_on_ = EPOLLOUT;
      return errno == EAGAIN || errno == EWOULDBLOCK ? IoResult::kWouldBlock : IoResult::kError;
    }
  }

  void ShutdownWrite() override { (void)::shutdown(fd_, SHUT_WR); }

 private:
  int fd_;
};

class Tls final : public Transport {
 public:
  Tls(int fd, SSL* ssl) : fd_(fd), ssl_(ssl) {}
  ~Tls() override { SSL_free(ssl_); }
  Tls(const Tls&) = delete;
  Tls& operator=(const Tls&) = delete;

  IoResult Handshake() override {
    ERR_clear_error();
    const int rc = SSL_do_handshake(ssl_);
    return rc == 1 ? IoResult::kOk : Failure(rc);
  }

  IoResult Read(char* buf, size_t cap, size_t& got) override {
    got = 0;
    ERR_clear_error();
    const int rc = SSL_read_ex(ssl_, buf, cap, &got);
    return rc == 1 ? IoResult::kOk : Failure(rc);
  }

  IoResult Write(const char* buf, size_t len, size_t& put) override {
    put = 0;
    ERR_clear_error();
    const int rc = SSL_write_ex(ssl_, buf, len, &put);
    return rc == 1 ? IoResult::kOk : Failure(rc);
  }

  void ShutdownWrite() override {
    // One attempt at close_notify: a peer that does not read it loses nothing it needs.
    ERR_clear_error();
    (void)SSL_shutdown(ssl_);
    ERR_clear_error();
    (void)::shutdown(fd_, SHUT_WR);
  }

 private:
  IoResult Failure(int rc) {
    switch (SSL_get_error(ssl_, rc)) {
      case SSL_ERROR_WANT_READ:
        blocked_on_ = EPOLLIN;
        return IoResult::kWouldBlock;
      case SSL_ERROR_WANT_WRITE:
        blocked_on_ = EPOLLOUT;
        return IoResult::kWouldBlock;
      case SSL_ERROR_ZERO_RETURN:
        return IoResult::kClosed;
      default:
        // The error queue is per thread; leave it empty for the next connection's calls.
        ERR_clear_error();
        return IoResult::kError;
    }
  }

  int fd_;
  SSL* ssl_;
};

}  // namespace

std::unique_ptr<Transport> PlainTransport(int fd) {
  return std::make_unique<Plain>(fd);
}

std::unique_ptr<Transport> TlsTransport(int fd, ssl_ctx_st* ctx) {
  SSL* ssl = SSL_new(ctx);
  if (ssl == nullptr) {
    ERR_clear_error();
    return nullptr;
  }
  if (SSL_set_fd(ssl, fd) != 1) {
    SSL_free(ssl);
    ERR_clear_error();
    return nullptr;
  }
  SSL_set_accept_state(ssl);
  return std::make_unique<Tls>(fd, ssl);
}

}  // namespace vgpu::net
