#pragma once

// A fixed set of threads running jobs from a bounded queue. A full queue refuses at once (the
// caller answers "busy"), so a burst cannot pile up work and memory without bound; cpp-httplib's
// pool queues without limit.

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace vgpu::net {

class WorkerPool {
 public:
  WorkerPool(int threads, size_t max_queued);
  ~WorkerPool();  // Shutdown()
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // False when `max_queued` jobs are waiting already beyond those idle workers are taking (0: run
  // only on an idle worker), or after Shutdown.
  bool TryPost(std::function<void()> job);
  // Whether TryPost would refuse a job now.
  bool Full() const;
  // Jobs running finish; jobs still queued are dropped. Idempotent.
  void Shutdown();

 private:
  void Run();
  bool FullLocked() const;

  const size_t max_queued_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  const size_t workers_;
  size_t running_ = 0;  // workers running a job
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace vgpu::net
