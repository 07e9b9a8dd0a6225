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
// Clients. Every limit on what is held at once (connections, buffered bodies) has a share per
// client too: a peer is a source address (IPv6: its /64, what one host is given), and no one peer
// may take more than its share. When a listener is full, the peer holding the most gives way
// (its oldest idle connection is closed, its largest body under way refused) to a peer holding
// less, so a newcomer, the kubelet's probe among them, is served whatever one client holds. A
// peer at its own share gives way to itself: its new connection replaces its oldest idle one.
// Clients behind one address (a NAT, a proxy) share one share.
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
  // Request bodies buffered by all connections of a listener at once, and by those of one peer:
  // a body's Content-Length counts from its head, a chunked body's bytes as they arrive, each
  // until the answer is written. A request that would go over its peer's share gets 503 at once;
  // one that would go over the listener's budget makes the peer holding the most refuse its
  // largest body under way (503) when that peer holds more, else gets 503 itself. The share
  // lets one peer send two bodies of the largest size at once (the API server, one peer, sends
  // reviews of a few KiB).
  size_t max_buffered_body_bytes = 8 * kMaxRequestBodyBytes;
  size_t max_buffered_body_bytes_per_peer = 2 * kMaxRequestBodyBytes;
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
  // Open connections. One more makes the peer holding the most close its oldest idle one (or,
  // where it has none, is answered 503 and closed at once). Also when the process runs out of
  // descriptors first (RLIMIT_NOFILE below this).
  int max_connections = 4096;
  // Open connections of one peer; one more closes the peer's own oldest idle one. The API server
  // opens one per webhook call under way (a few hundred at a burst of pod creations), kubelet
  // probes and Prometheus one or two.
  int max_connections_per_peer = 512;
  // Requests waiting for a worker thread; one more is answered 503 at once.
  int max_queued_requests = 1024;
};

}  // namespace vgpu::net
