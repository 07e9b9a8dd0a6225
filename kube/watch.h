#pragma once

// A resumable watch on one resource type, run on its own thread (see Client::Watch).
//  - Starts with a list (handed to on_list) unless a resourceVersion is given.
//  - Events go to on_event in order, on the watch thread; the watcher remembers the last
//    resourceVersion and, after a disconnect or a server-side timeout, resumes from it.
//  - On 410 Gone (HTTP or an in-stream ERROR event) it lists again and calls on_list, which
//    should replace the caller's view with the list's items.
//  - Stop() (or the destructor) cancels the stream at once and joins the thread.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "core/base/status.h"
#include "kube/resources.h"

namespace vgpu::kube {

class Client;
class StreamCancel;

enum class EventType { kAdded, kModified, kDeleted, kBookmark };

struct WatchEvent {
  EventType type;
  nlohmann::json object;
};

struct WatchHandlers {
  std::function<void(const WatchEvent&)> on_event;     // required
  std::function<void(const nlohmann::json&)> on_list;  // the list (kind ...List, items)
  std::function<void(const Status&)> on_error;         // informational; the watch retries
};

struct WatchOptions {
  std::string label_selector;
  std::string field_selector;
  std::string resource_version;  // empty: list first
  std::chrono::milliseconds min_backoff{50};
  std::chrono::milliseconds max_backoff{5000};
  int timeout_seconds = 300;  // per watch request; the watcher then resumes transparently
};

class Watcher {
 public:
  ~Watcher();
  Watcher(const Watcher&) = delete;
  Watcher& operator=(const Watcher&) = delete;

  void Stop();
  std::string resource_version() const;
  int64_t lists() const { return lists_.load(); }            // initial list + relists
  int64_t reconnects() const { return reconnects_.load(); }  // watch requests after the first
  int64_t events() const { return events_.load(); }

 private:
  friend class Client;
  Watcher(Client& client, ResourceType type, std::string ns, WatchOptions options,
          WatchHandlers handlers);
  void Run();
  bool List();
  // Returns true when the stream asked for a relist (410).
  bool WatchOnce();
  void Backoff();
  void SetRv(std::string rv);

  Client& client_;
  ResourceType type_;
  std::string ns_;
  WatchOptions options_;
  WatchHandlers handlers_;
  std::unique_ptr<StreamCancel> cancel_;
  std::atomic<bool> stopped_{false};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string rv_;
  std::chrono::milliseconds backoff_{0};
  std::atomic<int64_t> lists_{0};
  std::atomic<int64_t> reconnects_{0};
  std::atomic<int64_t> events_{0};
  std::thread thread_;
};

}  // namespace vgpu::kube
