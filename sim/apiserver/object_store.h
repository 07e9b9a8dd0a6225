#pragma once

// The in-memory object store behind the simulated API server: typed by resource ("pods",
// "nodes", "events", "namespaces", "leases"), one global monotonically increasing
// resourceVersion, and a bounded history of change events for watches (older resourceVersions
// are "gone", like a compacted etcd). Thread-safe; no I/O, so it is also usable directly by tests.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"

namespace vgpu::sim {

struct ResourceInfo {
  std::string_view plural;
  std::string_view kind;
  std::string_view api_version;
  bool namespaced;
};

// The resources the simulated server serves, or nullptr.
const ResourceInfo* FindResource(std::string_view api_version, std::string_view plural);

enum class PatchType { kMerge, kJson };

struct WatchEvent {
  int64_t rv;
  std::string_view type;  // ADDED | MODIFIED | DELETED (static strings)
  const ResourceInfo* resource;
  std::string ns;
  std::shared_ptr<const nlohmann::json> object;
  // `{"type":...,"object":...}\n`, serialized once and shared by every watcher.
  std::shared_ptr<const std::string> line;
};

struct WatchBatch {
  bool gone = false;               // the requested resourceVersion is older than the history
  std::vector<WatchEvent> events;  // of the requested resource (and namespace) only
  int64_t next_rv = 0;             // resume point: every event up to here has been examined
};

struct ListResult {
  std::vector<nlohmann::json> items;
  int64_t rv = 0;
};

class ObjectStore {
 public:
  explicit ObjectStore(size_t history_limit = 10000);

  // Errors: AlreadyExists, NotFound, FailedPrecondition (resourceVersion conflict, pod already
  // bound, failed JSON-patch `test`), InvalidArgument (malformed object or patch).
  Result<nlohmann::json> Create(const ResourceInfo& r, std::string_view ns, nlohmann::json obj);
  Result<nlohmann::json> Get(const ResourceInfo& r, std::string_view ns,
                             std::string_view name) const;
  // Empty `ns` lists all namespaces. `filter` (optional) keeps matching objects.
  ListResult List(const ResourceInfo& r, std::string_view ns,
                  const std::function<bool(const nlohmann::json&)>& filter = {}) const;
  // The same as serialized JSON ("[{...},{...}]"), built from text cached at write time, so
  // that large lists cost a string concatenation rather than a copy and a dump of every object.
  struct ListText {
    std::string items;
    int64_t rv = 0;
  };
  ListText ListSerialized(const ResourceInfo& r, std::string_view ns,
                          const std::function<bool(const nlohmann::json&)>& filter = {}) const;
  Result<std::string> GetSerialized(const ResourceInfo& r, std::string_view ns,
                                    std::string_view name) const;
  // PUT semantics: a resourceVersion in `obj`, when set, must match the stored one.
  Result<nlohmann::json> Update(const ResourceInfo& r, std::string_view ns, std::string_view name,
                                nlohmann::json obj);
  Result<nlohmann::json> Patch(const ResourceInfo& r, std::string_view ns, std::string_view name,
                               PatchType type, const nlohmann::json& patch);
  Result<nlohmann::json> Delete(const ResourceInfo& r, std::string_view ns, std::string_view name);
  // pods/binding: sets spec.nodeName once.
  Result<nlohmann::json> Bind(std::string_view ns, std::string_view pod, std::string_view node);

  int64_t resource_version() const;

  // Waits up to `timeout` for events after `after_rv` of resource `r` (and `ns` unless empty).
  // Returns early, possibly empty, when `wake()` is called.
  WatchBatch WaitEvents(const ResourceInfo& r, std::string_view ns, int64_t after_rv,
                        std::chrono::milliseconds timeout) const;
  // Wakes every waiter (used on shutdown and to disconnect watchers).
  void WakeAll() const;
  // Forgets the history: watches from any resourceVersion before now get "gone".
  void CompactHistory();

 private:
  using Key = std::string;  // "<ns>/<name>" or "/<name>" for cluster-scoped objects
  struct Entry {
    nlohmann::json object;
    std::shared_ptr<const std::string> text;  // object.dump()
  };
  Result<nlohmann::json> Mutate(const ResourceInfo& r, std::string_view ns, std::string_view name,
                                const std::function<Status(nlohmann::json&)>& change);
  // Records a change event; returns the object's serialized text.
  std::shared_ptr<const std::string> RecordLocked(const ResourceInfo& r, std::string_view ns,
                                                  std::string_view type, const nlohmann::json& obj);
  int64_t NextRvLocked(nlohmann::json& obj);
  // Calls `visit` for every stored object of `r` in namespace `ns` (all when empty), in key
  // order. Caller holds mu_.
  void ForEachLocked(const ResourceInfo& r, std::string_view ns,
                     const std::function<void(const Entry&)>& visit) const;

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::map<std::string_view, std::map<Key, Entry>> objects_;
  int64_t rv_ = 0;
  int64_t compacted_rv_ = 0;  // events with rv <= this are no longer in history_
  std::deque<WatchEvent> history_;
  size_t history_limit_;
  uint64_t uid_counter_ = 0;
  mutable uint64_t wake_generation_ = 0;
};

}  // namespace vgpu::sim
