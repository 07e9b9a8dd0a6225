#pragma once

// The whole vgpu-scheduler in one object, for the binary and for embedders such as `vgpu sim`:
// watches into the model, the extender verbs, the HTTP(S) and metrics listeners.
//
//   SchedulerServiceOptions o;                 // defaults: 127.0.0.1:<ephemeral>, no metrics
//   auto svc = SchedulerService::Start(o, client);
//   (*svc)->WaitReady(5s);  kube-scheduler-like callers POST to (*svc)->url() + "/filter" ...

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "kube/client.h"
#include "scheduler/cluster_model.h"
#include "scheduler/extender.h"
#include "scheduler/kube_adapter.h"
#include "scheduler/leader_elector.h"
#include "scheduler/metrics.h"
#include "scheduler/server.h"

namespace vgpu::scheduler {

struct SchedulerServiceOptions {
  ExtenderOptions extender;
  ServerOptions server = EmbeddedServer();
  FeedOptions feed;
  // Off by default (one replica). On: only the leader binds, after re-reading nodes and pods.
  LeaderElectionOptions leader;

  // Loopback, ephemeral port, no metrics listener: what tests and the simulator want.
  static ServerOptions EmbeddedServer() {
    ServerOptions s;
    s.http_bind = "127.0.0.1:0";
    s.metrics_bind = "";
    return s;
  }
};

class SchedulerService {
 public:
  // `client` must outlive the service.
  static Result<std::unique_ptr<SchedulerService>> Start(SchedulerServiceOptions options,
                                                         kube::Client& client);
  ~SchedulerService() { Stop(); }
  SchedulerService(const SchedulerService&) = delete;
  SchedulerService& operator=(const SchedulerService&) = delete;

  // Ready once the first node and pod lists are in the model (also what /readyz says).
  bool WaitReady(std::chrono::milliseconds timeout);
  void Stop();

  int port() const { return server_->http_port(); }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port()); }
  int metrics_port() const { return server_->metrics_port(); }
  int https_port() const { return server_->https_port(); }
  ClusterModel& model() { return model_; }
  SchedulerMetrics& metrics() { return metrics_; }
  Extender& extender() { return *extender_; }
  // nullptr unless leader election is on.
  LeaderElector* elector() { return elector_.get(); }
  // What bind asks first: ok when this replica may bind now.
  Status BindGate() const;

 private:
  SchedulerService(const SchedulerServiceOptions& options, kube::Client& client);

  ClusterModel model_;
  SchedulerMetrics metrics_;
  KubeClusterApi api_;
  std::unique_ptr<KubeFeed> feed_;
  std::unique_ptr<Extender> extender_;
  std::unique_ptr<Requeuer> requeuer_;
  std::unique_ptr<LeaderElector> elector_;
  std::atomic<uint64_t> resynced_term_{0};  // the term whose Resync() was started
  std::unique_ptr<Server> server_;
};

}  // namespace vgpu::scheduler
