#include "net/worker_pool.h"

namespace vgpu::net {

WorkerPool::WorkerPool(int threads, size_t max_queued)
    : max_queued_(max_queued), workers_(static_cast<size_t>(threads > 0 ? threads : 1)) {
  threads_.reserve(workers_);
  for (size_t i = 0; i < workers_; ++i) threads_.emplace_back([this] { Run(); });
}

WorkerPool::~WorkerPool() {
  Shutdown();
}

bool WorkerPool::TryPost(std::function<void()> job) {
  {
    std::lock_guard lock(mu_);
    if (FullLocked()) return false;
    jobs_.push_back(std::move(job));
  }
  cv_.notify_one();
  return true;
}

bool WorkerPool::Full() const {
  std::lock_guard lock(mu_);
  return FullLocked();
}

// Jobs that free workers are about to take do not wait: they do not count against the queue.
// A worker is free unless it runs a job, also before its thread first waits (a request that
// came right after the start was refused as "workers busy", HttpServerTest).
bool WorkerPool::FullLocked() const {
  return stopping_ || jobs_.size() >= max_queued_ + (workers_ - running_);
}

void WorkerPool::Shutdown() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    jobs_.clear();
  }
  cv_.notify_all();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

void WorkerPool::Run() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
      ++running_;
    }
    job();
    std::lock_guard lock(mu_);
    --running_;
  }
}

}  // namespace vgpu::net
