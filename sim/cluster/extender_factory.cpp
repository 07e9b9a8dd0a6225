#include "sim/cluster/extender_factory.h"

#include <chrono>
#include <thread>

#include "core/base/log.h"
#include "core/sched/policy.h"
#include "kube/client.h"
#include "scheduler/extender.h"
#include "scheduler/kube_adapter.h"
#include "scheduler/server.h"

namespace vgpu::sim {

namespace {

// Members in construction order; destroyed in reverse (server first, client last).
class RealExtender : public ExtenderHandle {
 public:
  static Result<std::unique_ptr<ExtenderHandle>> Start(const ExtenderSetup& setup,
                                                       const RealExtenderOptions& o) {
    std::unique_ptr<RealExtender> e(new RealExtender());
    kube::ClientConfig cfg;
    cfg.server = setup.api_url;
    cfg.qps = 0;
    cfg.max_idle_connections = 64;
    cfg.user_agent = "vgpu-scheduler (sim)";
    auto client = kube::Client::New(cfg);
    if (!client.ok()) return client.status();
    e->client_ = std::move(*client);

    scheduler::ExtenderOptions ext;
    ext.scheduler_name = setup.scheduler_name;
    ext.defaults.mem_mib = setup.defaults.default_mem_mib;
    ext.defaults.cores = setup.defaults.default_cores;
    ext.defaults.gpu_num = setup.defaults.default_gpu_num;
    auto np = sched::ParseNodePolicy(setup.policy.node_policy);
    if (!np.ok()) return np.status().WithContext("node policy");
    auto gp = sched::ParseGpuPolicy(setup.policy.gpu_policy);
    if (!gp.ok()) return gp.status().WithContext("GPU policy");
    ext.defaults.node_policy = *np;
    ext.defaults.gpu_policy = *gp;
    ext.check_handshake = o.handshake;
    ext.lock.wait_timeout = o.lock_wait;
    // The run's binds race its filter as kube-scheduler's asynchronous ones do; the report counts
    // the refused ones (binds_refused), so they are not warnings here.
    ext.bind_failure_level = log::Level::kInfo;

    e->model_ = std::make_unique<scheduler::ClusterModel>(ext.names);
    e->metrics_ = std::make_unique<scheduler::SchedulerMetrics>();
    e->api_ = std::make_unique<scheduler::KubeClusterApi>(*e->client_);
    scheduler::FeedOptions feed;
    // Only where the scenario has quotas: a watch more per run for nothing otherwise.
    feed.watch_quotas = !setup.quota_namespaces.empty();
    feed.write_handshake = o.handshake;
    feed.handshake_timeout = ext.handshake_timeout;
    e->feed_ = std::make_unique<scheduler::KubeFeed>(*e->client_, *e->model_, feed);
    e->extender_ = std::make_unique<scheduler::Extender>(ext, *e->model_, *e->api_, *e->metrics_);
    scheduler::ServerOptions so;
    so.http_bind = "127.0.0.1:0";
    so.metrics_bind = "";
    auto server = scheduler::Server::Start(so, *e->extender_, *e->model_, *e->metrics_);
    if (!server.ok()) return server.status();
    e->server_ = std::move(*server);
    if (!e->feed_->WaitReady(std::chrono::seconds(30))) {
      return DeadlineExceeded("the extender's watches did not list nodes and pods in 30 s");
    }
    // The first pods must meet their namespace's quota: wait until the watch has delivered it.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    for (const std::string& ns : setup.quota_namespaces) {
      while (!e->model_->Quota(ns)) {
        if (std::chrono::steady_clock::now() > deadline) {
          return DeadlineExceeded("the extender's quota watch did not show namespace " + ns +
                                  "'s ResourceQuota in 30 s");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    e->server_->SetReady(true);
    return std::unique_ptr<ExtenderHandle>(std::move(e));
  }

  ~RealExtender() override {
    if (server_) server_->Stop();
    if (feed_) feed_->Stop();
  }

  std::string url() const override {
    return "http://127.0.0.1:" + std::to_string(server_->http_port());
  }

 private:
  RealExtender() = default;
  std::unique_ptr<kube::Client> client_;
  std::unique_ptr<scheduler::ClusterModel> model_;
  std::unique_ptr<scheduler::SchedulerMetrics> metrics_;
  std::unique_ptr<scheduler::KubeClusterApi> api_;
  std::unique_ptr<scheduler::KubeFeed> feed_;
  std::unique_ptr<scheduler::Extender> extender_;
  std::unique_ptr<scheduler::Server> server_;
};

}  // namespace

ExtenderFactory RealExtenderFactory(RealExtenderOptions options) {
  return [options](const ExtenderSetup& setup) { return RealExtender::Start(setup, options); };
}

}  // namespace vgpu::sim
