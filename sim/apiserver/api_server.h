#pragma once

// An in-process HTTP server speaking the subset of the Kubernetes API that vgpu uses, for tests
// and `vgpu sim`: core/v1 nodes, pods (+ binding, status), events, namespaces and
// coordination.k8s.io/v1 leases; get, list (label/field selectors), create, update (PUT), delete,
// merge / JSON / strategic-merge (as merge) patches, and watch (chunked JSON lines, bounded
// history, 410 Gone). Errors are Kubernetes Status objects. See docs/kube-client.md.

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <thread>

#include "core/base/status.h"
#include "sim/apiserver/object_store.h"

namespace httplib {
class Server;
}

namespace vgpu::sim {

struct ApiServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0 = an ephemeral port, see ApiServer::port()
  // Change events kept for watch resumption; older resourceVersions get 410 Gone.
  size_t history_limit = 10000;
  // cpp-httplib serves each connection (kept alive or watching) on one pool thread.
  int worker_threads = 256;
  // An idle watch stream writes a blank line this often; that is how a disconnected watcher is
  // noticed and its thread freed.
  std::chrono::milliseconds watch_heartbeat{500};
};

class ApiServer {
 public:
  // Binds and starts serving on a background thread; namespaces default and kube-system exist.
  static Result<std::unique_ptr<ApiServer>> Start(ApiServerOptions options = {});
  ~ApiServer();  // Stop()
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  // Ends every watch stream, stops accepting and joins all server threads. Idempotent.
  void Stop();

  int port() const { return port_; }
  std::string url() const;  // "http://127.0.0.1:<port>"

  // Direct access for tests and the simulator, with the same semantics as the REST API.
  ObjectStore& store() { return store_; }
  // `plural` is one of pods, nodes, events, namespaces, leases; the namespace comes from
  // metadata.namespace.
  Result<nlohmann::json> Seed(std::string_view plural, nlohmann::json object);
  Result<nlohmann::json> Get(std::string_view plural, std::string_view ns, std::string_view name);

  // --- Failure injection -------------------------------------------------------------------
  // The next `n` requests are answered with `http_code` and a Status body.
  void FailNextRequests(int n, int http_code = 500);
  // The next `n` requests get response headers and then a closed connection.
  void DropNextRequests(int n);
  // Cuts every open watch stream (clients should resume from their last resourceVersion), and
  // the watches of requests admitted before this call whose streams have not opened yet.
  void DisconnectWatches();
  // Forgets the event history: watches from any earlier resourceVersion get 410 Gone.
  void CompactHistory() { store_.CompactHistory(); }

  // --- Counters ----------------------------------------------------------------------------
  int64_t request_count() const { return requests_.load(); }
  int64_t watch_requests() const { return watch_requests_.load(); }
  int active_watches() const { return active_watches_.load(); }
  // The Authorization header of the most recent request ("" when none), for auth tests.
  std::string last_authorization() const;

 private:
  explicit ApiServer(ApiServerOptions options);
  void Route();

  ApiServerOptions options_;
  ObjectStore store_;
  std::unique_ptr<httplib::Server> http_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> disconnect_generation_{0};
  std::atomic<int64_t> requests_{0};
  std::atomic<int64_t> watch_requests_{0};
  std::atomic<int> active_watches_{0};
  mutable std::mutex fail_mu_;
  int fail_next_ = 0;
  int fail_code_ = 500;
  int drop_next_ = 0;
  std::string last_authorization_;
  friend class ApiHandler;
};

}  // namespace vgpu::sim
