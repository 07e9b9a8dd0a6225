#pragma once

// An in-memory ClusterApi for unit tests of the Allocate flow: it keeps node and pod objects
// and applies annotation patches the way the API server does, and can play an unreachable server.

#include <atomic>
#include <map>
#include <mutex>

#include "deviceplugin/cluster_api.h"

namespace vgpu::deviceplugin::testing {

class MemoryCluster : public ClusterApi {
 public:
  void PutNode(nlohmann::json node) {
    std::lock_guard l(mu_);
    const std::string key = node["metadata"]["name"].get<std::string>();
    nodes_[key] = std::move(node);
  }
  void PutPod(nlohmann::json pod) {
    std::lock_guard l(mu_);
    const auto& m = pod["metadata"];
    const std::string key = m["namespace"].get<std::string>() + "/" + m["name"].get<std::string>();
    pods_[key] = std::move(pod);
  }
  nlohmann::json Pod(const std::string& ns, const std::string& name) {
    std::lock_guard l(mu_);
    return pods_.at(ns + "/" + name);
  }
  nlohmann::json Node(const std::string& name) {
    std::lock_guard l(mu_);
    return nodes_.at(name);
  }
  void SetReachable(bool up) {
    std::lock_guard l(mu_);
    reachable_ = up;
  }
  // false: status patches are refused as without RBAC on nodes/status.
  void AllowStatus(bool allowed) {
    std::lock_guard l(mu_);
    status_allowed_ = allowed;
  }
  int writes() const { return writes_; }
  int status_writes() {
    std::lock_guard l(mu_);
    return status_writes_;
  }
  // Status patches asked for, refused ones included.
  int status_attempts() {
    std::lock_guard l(mu_);
    return status_attempts_;
  }
  int pod_gets() const { return gets_; }
  int pod_lists() const { return lists_; }

  Result<nlohmann::json> GetNode(const std::string& name) override {
    std::lock_guard l(mu_);
    if (!reachable_) return Unavailable("connection refused");
    auto it = nodes_.find(name);
    if (it == nodes_.end()) return NotFound("node " + name + " not found");
    return it->second;
  }
  Result<nlohmann::json> GetPod(const std::string& ns, const std::string& name) override {
    std::lock_guard l(mu_);
    if (!reachable_) return Unavailable("connection refused");
    ++gets_;
    auto it = pods_.find(ns + "/" + name);
    if (it == pods_.end()) return NotFound("pod " + ns + "/" + name + " not found");
    return it->second;
  }
  Result<std::vector<nlohmann::json>> ListPodsOnNode(const std::string& node) override {
    std::lock_guard l(mu_);
    if (!reachable_) return Unavailable("connection refused");
    ++lists_;
    std::vector<nlohmann::json> out;
    for (const auto& [k, p] : pods_) {
      if (p.value("/spec/nodeName"_json_pointer, std::string()) == node) out.push_back(p);
    }
    return out;
  }
  Status PatchPodAnnotations(const std::string& ns, const std::string& name,
                             const AnnotationPatch& patch) override {
    std::lock_guard l(mu_);
    if (!reachable_) return Unavailable("connection refused");
    auto it = pods_.find(ns + "/" + name);
    if (it == pods_.end()) return NotFound("pod " + ns + "/" + name + " not found");
    it->second.merge_patch(AnnotationMergePatch(patch));
    ++writes_;
    return Status::Ok();
  }
  Status PatchNodeAnnotations(const std::string& name, const AnnotationPatch& patch) override {
    std::lock_guard l(mu_);
    if (!reachable_) return Unavailable("connection refused");
    auto it = nodes_.find(name);
    if (it == nodes_.end()) return NotFound("node " + name + " not found");
    it->second.merge_patch(AnnotationMergePatch(patch));
    ++writes_;
    return Status::Ok();
  }
  Status PatchNodeStatus(const std::string& name, const nlohmann::json& merge_patch) override {
    std::lock_guard l(mu_);
    ++status_attempts_;
    if (!reachable_) return Unavailable("connection refused");
    if (!status_allowed_) {
      return PermissionDenied("nodes \"" + name +
                              "\" is forbidden: cannot patch resource \"nodes/status\"");
    }
    auto it = nodes_.find(name);
    if (it == nodes_.end()) return NotFound("node " + name + " not found");
    // The status subresource changes status only, as the API server does.
    nlohmann::json status = merge_patch.value("status", nlohmann::json::object());
    it->second["status"].merge_patch(status);
    ++status_writes_;
    return Status::Ok();
  }
  Status RemoveNodeAnnotationIf(const std::string& name, const std::string& key,
                                const std::string& expected) override {
    std::lock_guard l(mu_);
    if (!reachable_) return Unavailable("connection refused");
    auto it = nodes_.find(name);
    if (it == nodes_.end()) return NotFound("node " + name + " not found");
    auto& ann = it->second["metadata"]["annotations"];
    if (!ann.contains(key) || ann[key] != expected) return FailedPrecondition("value changed");
    ann.erase(key);
    ++writes_;
    return Status::Ok();
  }

 private:
  std::mutex mu_;
  bool reachable_ = true;
  bool status_allowed_ = true;
  std::atomic<int> writes_{0};  // read by tests while the plugin reports
  int status_writes_ = 0;
  int status_attempts_ = 0;
  int gets_ = 0;
  int lists_ = 0;
  std::map<std::string, nlohmann::json> nodes_;
  std::map<std::string, nlohmann::json> pods_;
};

}  // namespace vgpu::deviceplugin::testing
