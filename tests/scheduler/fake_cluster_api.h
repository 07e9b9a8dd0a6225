#pragma once

// An in-memory ClusterApi for tests: objects with resourceVersions, RFC 6902 patches (with
// `test`), merge patches and bindings, and a synchronous "watch" into a ClusterModel.
// Failures can be injected per call kind.

#include <atomic>
#include <map>
#include <mutex>
#include <string>

#include "scheduler/cluster_api.h"
#include "scheduler/cluster_model.h"

namespace vgpu::scheduler::testing {

class FakeClusterApi : public ClusterApi {
 public:
  explicit FakeClusterApi(ClusterModel* model = nullptr) : model_(model) {}

  void PutNode(nlohmann::json node) {
    std::lock_guard lock(mu_);
    Stamp(node);
    nodes_[node["metadata"]["name"].get<std::string>()] = node;
    if (model_) model_->UpsertNode(node);
  }
  void PutPod(nlohmann::json pod) {
    std::lock_guard lock(mu_);
    Stamp(pod);
    pods_[Key(pod)] = pod;
    if (model_) model_->UpsertPod(pod);
  }
  void DeletePod(const std::string& ns, const std::string& name) {
    std::lock_guard lock(mu_);
    auto it = pods_.find(ns + "/" + name);
    if (it == pods_.end()) return;
    if (model_) model_->RemovePod(it->second);
    pods_.erase(it);
  }
  nlohmann::json Node(const std::string& name) {
    std::lock_guard lock(mu_);
    return nodes_.at(name);
  }
  nlohmann::json Pod(const std::string& ns, const std::string& name) {
    std::lock_guard lock(mu_);
    return pods_.at(ns + "/" + name);
  }

  Result<nlohmann::json> GetNode(const std::string& name) override {
    std::lock_guard lock(mu_);
    node_gets++;
    auto it = nodes_.find(name);
    if (it == nodes_.end()) return NotFound("node " + name);
    return it->second;
  }
  Result<nlohmann::json> GetPod(const std::string& ns, const std::string& name) override {
    std::lock_guard lock(mu_);
    pod_gets++;
    auto it = pods_.find(ns + "/" + name);
    if (it == pods_.end()) return NotFound("pod " + ns + "/" + name);
    return it->second;
  }
  Status JsonPatchNode(const std::string& name, const nlohmann::json& ops) override {
    std::lock_guard lock(mu_);
    node_patches++;
    auto it = nodes_.find(name);
    if (it == nodes_.end()) return NotFound("node " + name);
    nlohmann::json patched;
    try {
      patched = it->second.patch(ops);
    } catch (const nlohmann::json::exception& e) {
      return FailedPrecondition(std::string("patch rejected: ") + e.what());
    }
    Stamp(patched);
    it->second = patched;
    if (model_) model_->UpsertNode(patched);
    return Status::Ok();
  }
  Status MergePatchPod(const std::string& ns, const std::string& name,
                       const nlohmann::json& patch) override {
    std::lock_guard lock(mu_);
    if (fail_pod_patches > 0) {
      --fail_pod_patches;
      return Unavailable("injected pod patch failure");
    }
    auto it = pods_.find(ns + "/" + name);
    if (it == pods_.end()) return NotFound("pod " + ns + "/" + name);
    // A resourceVersion in the patch is a precondition, as the API server treats it (409).
    const nlohmann::json::json_pointer rv("/metadata/resourceVersion");
    if (patch.contains(rv) && patch.at(rv) != it->second.at(rv)) {
      return FailedPrecondition("Operation cannot be fulfilled on pods \"" + name +
                                "\": the object has been modified");
    }
    it->second.merge_patch(patch);
    Stamp(it->second);
    if (model_) model_->UpsertPod(it->second);
    return Status::Ok();
  }
  Status BindPod(const std::string& ns, const std::string& name, const std::string&,
                 const std::string& node) override {
    std::lock_guard lock(mu_);
    if (fail_binds > 0) {
      --fail_binds;
      return Unavailable("injected binding failure");
    }
    auto it = pods_.find(ns + "/" + name);
    if (it == pods_.end()) return NotFound("pod " + ns + "/" + name);
    if (it->second["spec"].contains("nodeName")) return FailedPrecondition("pod already bound");
    it->second["spec"]["nodeName"] = node;
    Stamp(it->second);
    if (model_) model_->UpsertPod(it->second);
    binds++;
    if (lose_bind_replies > 0) {
      --lose_bind_replies;
      return Unavailable("injected lost reply: the binding was made");
    }
    return Status::Ok();
  }
  Result<nlohmann::json> ListDisruptionBudgets() override {
    std::lock_guard lock(mu_);
    pdb_lists++;
    if (fail_pdb_lists) return Unavailable("injected PodDisruptionBudget list failure");
    return nlohmann::json{{"items", pdbs}};
  }

  nlohmann::json pdbs = nlohmann::json::array();  // what ListDisruptionBudgets answers
  bool fail_pdb_lists = false;
  int pdb_lists = 0;
  int fail_binds = 0;
  int lose_bind_replies = 0;  // bindings that are made but answered with an error
  int fail_pod_patches = 0;
  int binds = 0;
  int node_patches = 0;
  int node_gets = 0;
  int pod_gets = 0;

 private:
  static std::string Key(const nlohmann::json& pod) {
    return pod["metadata"].value("namespace", "default") + "/" +
           pod["metadata"]["name"].get<std::string>();
  }
  void Stamp(nlohmann::json& obj) { obj["metadata"]["resourceVersion"] = std::to_string(++rv_); }

  ClusterModel* model_;
  std::recursive_mutex mu_;
  int64_t rv_ = 0;
  std::map<std::string, nlohmann::json> nodes_, pods_;
};

}  // namespace vgpu::scheduler::testing
