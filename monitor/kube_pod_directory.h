#pragma once

// PodDirectory over the Kubernetes API: the pods bound to this node (field selector
// spec.nodeName=<node>, the same view as HAMi's monitor informer), listed once and then kept
// current by a watch that resumes after disconnects and relists after 410 Gone (kube/watch.h).
//
// Synced() guards the monitor's cleanup, which deletes the directories of pods missing here: it
// is true once the first list has arrived and stays true while the watch is healthy, and turns
// false when the API server has been failing (errors with no event or list in between) for longer
// than `stale_after`. A view that old may lack pods created since, whose directories must not go.
// It turns true again at the next event or list, or when a watch request started after the last
// error has ended without one (a quiet node produces no events, so that is the only sign).

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "core/base/status.h"
#include "kube/client.h"
#include "monitor/pod_directory.h"

namespace vgpu::monitor {

struct KubePodDirectoryOptions {
  std::string node_name;
  std::chrono::milliseconds stale_after{60000};
  // Server-side length of one watch request. Shorter requests show a recovered API server sooner
  // on a quiet node (see above), at the price of one request per node per period.
  int watch_timeout_seconds = 120;
  std::chrono::milliseconds min_backoff{200};
  std::chrono::milliseconds max_backoff{5000};
  // Injected for tests; steady_clock::now by default.
  std::function<std::chrono::steady_clock::time_point()> clock;
};

class KubePodDirectory : public PodDirectory {
 public:
  // Starts the list + watch on its own thread; returns at once. `client` outlives the directory.
  static Result<std::unique_ptr<KubePodDirectory>> Start(kube::Client& client,
                                                         KubePodDirectoryOptions options);
  ~KubePodDirectory() override;
  KubePodDirectory(const KubePodDirectory&) = delete;
  KubePodDirectory& operator=(const KubePodDirectory&) = delete;

  std::optional<PodIdentity> Find(const std::string& uid) const override;
  bool Synced() const override;

  // Waits up to `timeout` for the first list; returns whether it arrived.
  bool WaitForFirstList(std::chrono::milliseconds timeout) const;
  size_t size() const;
  // The last error the watch reported ("" when it has recovered since), for logs.
  std::string last_error() const;
  void Stop();

 private:
  explicit KubePodDirectory(KubePodDirectoryOptions options);
  std::chrono::steady_clock::time_point Now() const;
  void OnList(const nlohmann::json& list);
  void OnEvent(const kube::WatchEvent& event);
  void OnError(const Status& status);
  void MarkHealthyLocked();
  // Whether the watch has completed a request since the last error (see Synced).
  bool RecoveredLocked(int64_t reconnects) const;

  KubePodDirectoryOptions options_;
  mutable std::mutex mu_;
  mutable std::condition_variable listed_cv_;
  std::unordered_map<std::string, PodIdentity> pods_;  // by metadata.uid
  bool listed_ = false;
  std::optional<std::chrono::steady_clock::time_point> failing_since_;
  int64_t reconnects_at_error_ = 0;
  std::string last_error_;
  std::atomic<kube::Watcher*> watcher_raw_{nullptr};  // for the handlers, which may run first
  std::unique_ptr<kube::Watcher> watcher_;
};

}  // namespace vgpu::monitor
