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
  Result<std::unique_ptr<Server>> server =
      Server::Start(options.server, *s->extender_, s->model_, s->metrics_);
  if (!server.ok()) return server.status();
  s->server_ = std::move(*server);
  return s;
}

bool SchedulerService::WaitReady(std::chrono::milliseconds timeout) {
  const bool ready = feed_->WaitReady(timeout);
  server_->SetReady(ready);
  return ready;
}

void SchedulerService::Stop() {
  if (server_) server_->Stop();
  if (feed_) feed_->Stop();
}

}  // namespace vgpu::scheduler
