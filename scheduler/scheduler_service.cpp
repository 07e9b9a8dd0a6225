#include "scheduler/scheduler_service.h"

#include <thread>

namespace vgpu::scheduler {

SchedulerService::SchedulerService(const SchedulerServiceOptions& options, kube::Client& client)
    : model_(options.extender.names), api_(client) {}

Result<std::unique_ptr<SchedulerService>> SchedulerService::Start(SchedulerServiceOptions options,
                                                                  kube::Client& client) {
  std::unique_ptr<SchedulerService> s(new SchedulerService(options, client));
  options.feed.handshake_timeout = options.extender.handshake_timeout;
  s->feed_ = std::make_unique<KubeFeed>(client, s->model_, options.feed);
  s->extender_ = std::make_unique<Extender>(options.extender, s->model_, s->api_, s->metrics_);
  Requeuer::Options requeue;
  if (options.leader.enabled) {
    SchedulerService* self = s.get();
    Result<std::unique_ptr<LeaderElector>> elector =
        LeaderElector::Start(client, options.leader, [self](uint64_t term) {
          // Re-read nodes and pods: what the previous leader wrote before its term ended must be
          // in the model before this replica places anything.
          self->feed_->Resync();
          self->resynced_term_.store(term);
        });
    if (!elector.ok()) return elector.status();
    s->elector_ = std::move(*elector);
    s->extender_->SetBindGate([self] { return self->BindGate(); });
    // Binds refused in a failover's first moments are nudged back to kube-scheduler once this
    // replica may bind (requeue.h).
    requeue.gate_open = [self] { return self->BindGate().ok(); };
    options.server.readyz_note = [self] {
      return "leader election: " + self->elector_->Describe() + " of lease " +
             self->elector_->lease_path();
    };
  }
  // After the elector: the requeuer's thread may ask the gate, which reads elector_.
  ClusterModel* model = &s->model_;
  s->requeuer_ = std::make_unique<Requeuer>(
      s->api_, [model] { return model->capacity_generation(); }, std::move(requeue));
  s->extender_->SetRequeuer(s->requeuer_.get());
  Result<std::unique_ptr<Server>> server =
      Server::Start(options.server, *s->extender_, s->model_, s->metrics_);
  if (!server.ok()) return server.status();
  s->server_ = std::move(*server);
  return s;
}

Status SchedulerService::BindGate() const {
  if (!elector_) return Status::Ok();
  // Term first: a term that started after this read fails the equality below.
  const uint64_t term = elector_->term();
  if (!elector_->IsLeader()) {
    return FailedPrecondition("this vgpu-scheduler replica (" + elector_->options().identity +
                              ") is not the leader of lease " + elector_->lease_path() + ": " +
                              elector_->Describe() +
                              "; kube-scheduler retries the pod, and the replica beside the active "
                              "kube-scheduler takes the lease within its duration");
  }
  if (resynced_term_.load() != term || !feed_->synced()) {
    return Unavailable("this vgpu-scheduler replica just became leader of lease " +
                       elector_->lease_path() +
                       " and is re-reading nodes and pods from the API server before its first "
                       "bind; kube-scheduler retries the pod");
  }
  return Status::Ok();
}

bool SchedulerService::WaitReady(std::chrono::milliseconds timeout) {
  const bool ready = feed_->WaitReady(timeout);
  server_->SetReady(ready);
  return ready;
}

void SchedulerService::Stop() {
  if (server_) server_->Stop();
  if (elector_) elector_->Stop();
  if (requeuer_) requeuer_->Stop();
  if (feed_) feed_->Stop();
}

}  // namespace vgpu::scheduler
