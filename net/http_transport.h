#pragma once

// The byte stream of one accepted connection, plain or TLS, over a non-blocking socket: what
// net/http_server.cpp reads requests from and writes answers to without ever waiting. A call that
// cannot go on without the peer says so (kWouldBlock) and which readiness to wait for; TLS may
// need to read in order to write and the other way round.

#include <sys/epoll.h>

#include <cstddef>
#include <memory>

struct ssl_ctx_st;

namespace vgpu::net {

enum class IoResult { kOk, kWouldBlock, kClosed, kError };

class Transport {
 public:
  virtual ~Transport() = default;

  // TLS: the handshake (kOk once done); plain: kOk.
  virtual IoResult Handshake() = 0;
  // kOk with `got` > 0 bytes, kWouldBlock, kClosed (the peer's orderly end) or kError.
  virtual IoResult Read(char* buf, size_t cap, size_t& got) = 0;
  // kOk with `put` > 0 bytes written, kWouldBlock or kError.
  virtual IoResult Write(const char* buf, size_t len, size_t& put) = 0;
  // Ends our direction (TLS: close_notify first); the peer may still send.
  virtual void ShutdownWrite() = 0;
  // EPOLLIN or EPOLLOUT: what the last kWouldBlock waits for.
  uint32_t blocked_on() const { return blocked_on_; }

 protected:
  uint32_t blocked_on_ = EPOLLIN;
};

// Neither owns `fd`: the connection closes it after the transport is gone.
std::unique_ptr<Transport> PlainTransport(int fd);
// nullptr when OpenSSL cannot make a session (out of memory).
std::unique_ptr<Transport> TlsTransport(int fd, ssl_ctx_st* ctx);

}  // namespace vgpu::net
