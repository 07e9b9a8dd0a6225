#pragma once

// The HTTP/1.1 server of the project's listeners (the scheduler's extender, webhook and metrics,
// the node monitor), plain or TLS.
//
// Why not cpp-httplib's server (which the in-process API server of the tests still uses): it gives
// each connection a pool thread for the connection's whole life. A client that connects and sends
// nothing holds a thread for the keep-alive timeout, polling; one that trickles its request byte
// by byte holds it for as long as it keeps trickling (the read timeout restarts with every byte);
// with every thread held, /healthz waits in an unbounded queue behind them, and the kubelet kills
// a healthy scheduler. It also buffers a request line or header line without bound (until its
// newline), and a chunked body without bound (its body limit covers Content-Length only).
//
// Here one I/O thread reads and writes every connection without blocking (epoll): an idle or slow
// connection costs a descriptor and a few bytes of state, not a thread. A request reaches a worker
// thread only once it has arrived whole, within the limits of net/http_limits.h, which every phase
// of a connection also has a deadline from. Handlers that must answer even when every worker is
// busy (health probes) run on the I/O thread itself (RunOn::kIoThread).

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/base/status.h"
#include "net/http_limits.h"
#include "net/http_message.h"

struct ssl_ctx_st;

namespace vgpu::net {

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

// kWorker: a worker thread runs the handler. kIoThread: the I/O thread does, between reads and
// writes of every connection; for answers computed in microseconds that must never wait for a
// worker. Such a handler must not block (no I/O, no lock held for long by anyone).
enum class RunOn { kWorker, kIoThread };

struct HttpServerOptions {
  std::string what = "HTTP listener";  // names the listener in log lines
  int worker_threads = 4;
  HttpLimits limits;
  std::shared_ptr<ssl_ctx_st> tls;  // set: TLS on every connection
};

struct HttpServerStats {
  uint64_t accepted = 0;
  uint64_t refused_connections = 0;  // over max_connections (or its peer's) with none idle to close
  uint64_t evicted = 0;              // closed or refused (503) to make room for another peer's
  uint64_t timed_out = 0;            // closed at a deadline (408 when a request was under way)
  uint64_t too_large = 0;            // 413 and 431 answers
  uint64_t busy = 0;                 // 503: workers' queue full or body budget spent
  int open = 0;                      // connections open now
  int peers = 0;                     // distinct peers holding connections or bodies now
};

class HttpServer {
 public:
  explicit HttpServer(HttpServerOptions options);
  ~HttpServer();  // Stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Before Start. `method` "GET" (which answers HEAD too) or "POST"; `path` matched exactly.
  // An exception from a handler is a 500 answer.
  void Route(std::string method, std::string path, HttpHandler handler,
             RunOn run_on = RunOn::kWorker);

  // Listens on host:port (port 0: any free port) and serves from background threads; the port.
  Result<int> Start(const std::string& host, int port);
  // Closes the listener and every connection, waits for handlers running. Idempotent.
  void Stop();

  // Connections accepted from now on use `ctx` (certificate rotation); open ones keep theirs.
  void SetTlsContext(std::shared_ptr<ssl_ctx_st> ctx);

  int port() const;
  HttpServerStats stats() const;
  // "" while a request from a new client would be served; else why not (every worker busy and
  // the queue full). For readiness probes: a listener that refuses good requests is not ready.
  std::string Saturation() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vgpu::net
