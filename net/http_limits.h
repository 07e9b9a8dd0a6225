#pragma once

// Limits of the project's HTTP listeners (net/http_server.h): the one home of these numbers.
//
// Sizes. kube-scheduler calls the extender with nodeCacheCapable (deploy/kube-scheduler): a filter
// or prioritize body is the pod plus node names, a bind body a few names. An AdmissionReview
// carries the pod (and, for an update, the old pod); the API server refuses objects over 3 MiB,
// so a review stays under about 6 MiB plus its envelope. 16 MiB leaves room for both with
// clusters of tens of thousands of nodes, and still bounds what one request can make the process
// buffer. The budget for all bodies in flight bounds what many such requests at once can.
//
// Times. Every phase of a connection has a deadline, so a client that connects and sends nothing,
// trickles a request byte by byte, or never reads its answer is closed, not kept forever. A
// request must arrive whole within kRequestTimeout of its first byte (of the connection's accept
// for its first request): kube-scheduler and the API server send a request in one go, in far less.
// An idle kept-alive connection costs only a descriptor (nothing waits on it), so it stays longer
// than Go's clients keep theirs (90 s: kube-scheduler, the API server's webhook client,
// Prometheus): the client always closes first, and never sends a request on a connection the
// server is closing at the same moment (a POST lost that way is not retried).

#include <chrono>
#include <cstddef>

namespace vgpu::net {

// The largest request body a listener reads; a larger one gets 413 and the connection is closed.
inline constexpr size_t kMaxRequestBodyBytes = size_t{16} << 20;

struct HttpLimits {
  size_t max_body_bytes = kMaxRequestBodyBytes;
  // Request line and headers together; over it: 431. Kubernetes' clients send well under 2 KiB.
  size_t max_head_bytes = size_t{16} << 10;
  // Request bodies buffered by all connections of a listener at once; a request that would go
  // over it gets 503 at once (its Content-Length counts from its head; a chunked body counts the
  // whole max_body_bytes).
  size_t max_buffered_body_bytes = 8 * kMaxRequestBodyBytes;
  std::chrono::milliseconds request_timeout{10'000};  // whole request (or TLS handshake), else 408
  std::chrono::milliseconds idle_timeout{120'000};    // kept-alive connection with no request
  std::chrono::milliseconds write_timeout{10'000};    // whole answer written
  // After an answer that closes the connection, what the client still sends is read and dropped
  // for this long, so that closing does not reset the connection before the client has read
  // the answer (a 413 sent before the body was read, in particular).
  std::chrono::milliseconds linger{2'000};
  // ... and at most this much: dropping bytes costs the I/O thread that serves every connection.
  // Clients that read the answer while sending (Go's) or wait for 100 Continue (curl, for large
  // bodies) see the 413 at once; one that sends a refused body whole regardless gets a reset.
  size_t linger_bytes = size_t{256} << 10;
  // Open connections; one more is answered 503 and closed at once.
  int max_connections = 4096;
  // Requests waiting for a worker thread; one more is answered 503 at once.
  int max_queued_requests = 1024;
};

}  // namespace vgpu::net
