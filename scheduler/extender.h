#pragma once

// The kube-scheduler extender verbs and the admission webhook, as JSON in -> JSON out.
// HTTP lives in server.h; this class only decides and writes through ClusterApi.
//
// Wire types (k8s.io/kube-scheduler/extender/v1): requests are read with case-insensitive
// keys, as Go's encoding/json does (1.20-era kube-scheduler sends "Pod"/"NodeNames", later
// ones "pod"/"nodenames"); answers use the json tags of current kube-scheduler.

#include <chrono>
#include <deque>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>

#include "core/sched/admission.h"
#include "core/sched/pod_request.h"
#include "scheduler/cluster_api.h"
#include "scheduler/cluster_model.h"
#include "scheduler/metrics.h"
#include "scheduler/node_lock.h"

namespace vgpu::scheduler {

struct ExtenderOptions {
  sched::ResourceNames names;
  sched::RequestDefaults defaults;
  std::string scheduler_name = "hami-scheduler";
  std::string core_policy;  // GPU_CORE_UTILIZATION_POLICY added by the webhook
  bool check_handshake = true;
  std::chrono::seconds handshake_timeout{60};
  NodeLockOptions lock;
};

// An answer and the HTTP status it travels with (200 unless the request itself was unusable).
struct VerbResult {
  int http_status = 200;
  nlohmann::json body;
};

class Extender {
 public:
  Extender(ExtenderOptions options, ClusterModel& model, ClusterApi& api,
           SchedulerMetrics& metrics);

  VerbResult Filter(const nlohmann::json& args);      // ExtenderArgs -> ExtenderFilterResult
  VerbResult Prioritize(const nlohmann::json& args);  // ExtenderArgs -> HostPriorityList
  VerbResult Bind(const nlohmann::json& args);     // ExtenderBindingArgs -> ExtenderBindingResult
  VerbResult Admit(const nlohmann::json& review);  // AdmissionReview v1/v1beta1

  const ExtenderOptions& options() const { return options_; }

 private:
  struct PendingPod {
    sched::PodRequest request;
    std::map<std::string, int> scores;  // node -> 0..10 from the last filter
  };
  struct Evaluation {
    bool ok = false;
    sched::Reason reason = sched::Reason::kNodeUnregistered;
    std::string message;
    int score = 0;
  };
  Evaluation Evaluate(const std::string& node, const sched::PodRequest& req, const std::string& ns,
                      const std::optional<sched::NamespaceQuota>& quota,
                      std::chrono::system_clock::time_point now) const;
  sched::NodeFit FitWithChecks(const sched::NodeState& node, const sched::NodeView& view,
                               const sched::PodRequest& req, const std::string& ns,
                               const std::optional<sched::NamespaceQuota>& quota,
                               std::chrono::system_clock::time_point now) const;
  void Remember(const std::string& uid, PendingPod pending);
  std::optional<PendingPod> Recall(const std::string& uid, bool erase);

  ExtenderOptions options_;
  ClusterModel& model_;
  ClusterApi& api_;
  SchedulerMetrics& metrics_;
  NodeLocker locker_;
  sched::AdmissionConfig admission_;

  // Pods between filter and bind (bounded; oldest forgotten first).
  std::mutex pending_mu_;
  std::unordered_map<std::string, PendingPod> pending_;
  std::deque<std::string> pending_order_;
};

}  // namespace vgpu::scheduler
