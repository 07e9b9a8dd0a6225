#pragma once

// The kube-scheduler extender verbs and the admission webhook, as JSON in -> JSON out.
// HTTP lives in server.h; this class only decides and writes through ClusterApi.
//
// Wire types (k8s.io/kube-scheduler/extender/v1): requests are read with case-insensitive
// keys, as Go's encoding/json does (1.20-era kube-scheduler sends "Pod"/"NodeNames", later
// ones "pod"/"nodenames"); answers use the json tags of current kube-scheduler.

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <unordered_map>

#include "core/base/log.h"
#include "core/sched/pod_request.h"
#include "core/sched/webhook_mutation.h"
#include "scheduler/cluster_api.h"
#include "scheduler/cluster_model.h"
#include "scheduler/metrics.h"
#include "scheduler/node_lock.h"
#include "scheduler/requeue.h"

namespace vgpu::scheduler {

struct ExtenderOptions {
  sched::ResourceNames names;
  sched::RequestDefaults defaults;
  std::string scheduler_name = "hami-scheduler";
  std::string core_policy;          // GPU_CORE_UTILIZATION_POLICY added by the webhook
  sched::OverridePolicy overrides;  // what the webhook lets pods set of vgpu's own
  // enforce, or audit: admit what the checks refuse, with a warning, a log line and
  // vgpu_scheduler_webhook_would_deny_total (--webhook-mode; sched::WebhookMode says which).
  sched::WebhookMode webhook_mode = sched::WebhookMode::kEnforce;
  // Usernames that may change vgpu's own pod annotations on UPDATE (the scheduler's and the
  // device plugin's ServiceAccounts, --webhook-system-accounts).
  std::vector<std::string> system_users;
  bool check_handshake = true;
  std::chrono::seconds handshake_timeout{60};
  NodeLockOptions lock;
  // Filter evaluates large candidate lists on up to this many threads (like kube-scheduler's
  // own parallelism); 1 = the calling thread only.
  int filter_parallelism = 8;
  // How a refused bind is logged. A deployment warns; `vgpu sim`, whose asynchronous binds race
  // the filter by design (as kube-scheduler's do) and counts the refusals in its report, logs
  // them at info so that a run whose checks pass prints no warnings.
  log::Level bind_failure_level = log::Level::kWarn;
};

// An answer and the HTTP status it travels with (200 unless the request itself was unusable).
struct VerbResult {
  VerbResult() = default;
  VerbResult(int status, nlohmann::json answer) : http_status(status), body(std::move(answer)) {}
  static VerbResult FromText(int status, std::string text) {
    VerbResult r;
    r.http_status = status;
    r.raw = std::move(text);
    return r;
  }

  int http_status = 200;
  nlohmann::json body;  // the answer, unless `raw` already holds it as text
  std::string raw;      // large answers (filter, prioritize over thousands of nodes) are written
                        // straight to text: building JSON objects per node costs more than the fit
  std::string Text() const { return raw.empty() ? body.dump() : raw; }
  nlohmann::json Json() const { return raw.empty() ? body : nlohmann::json::parse(raw); }
};

class Extender {
 public:
  Extender(ExtenderOptions options, ClusterModel& model, ClusterApi& api,
           SchedulerMetrics& metrics);

  VerbResult Filter(const nlohmann::json& args);      // ExtenderArgs -> ExtenderFilterResult
  VerbResult Prioritize(const nlohmann::json& args);  // ExtenderArgs -> HostPriorityList
  VerbResult Bind(const nlohmann::json& args);  // ExtenderBindingArgs -> ExtenderBindingResult
  // ExtenderPreemptionArgs -> ExtenderPreemptionResult (NodeNameToMetaVictims). For each
  // candidate node kube-scheduler proposes, the pods to evict so the pod's vGPUs fit
  // (sched::SelectVictims) plus the victims kube-scheduler chose for its own resources; nodes
  // where eviction cannot help, or where nothing need be evicted, are left out, and so are nodes
  // whose victims violate more PodDisruptionBudgets than another node's. docs/scheduler.md.
  VerbResult Preempt(const nlohmann::json& args);
  // AdmissionReview v1/v1beta1. Pod CREATE: defaults, the scheduler's name, refusals
  // (sched::AdmitPod). Pod UPDATE: refuses changes to the annotations only vgpu writes unless
  // request.userInfo is one of `system_users` (sched::AdmitPodUpdate); never patches. Any other
  // operation is allowed untouched.
  VerbResult Admit(const nlohmann::json& review);

  const ExtenderOptions& options() const { return options_; }
  // Asked before a bind writes anything and again right before it writes the pod (after the node
  // lock): a non-ok Status refuses the bind with its message (leader election: only the leader,
  // with a model re-read since it was elected, binds). Set it before serving.
  void SetBindGate(std::function<Status()> gate) { bind_gate_ = std::move(gate); }
  // Pods the filter turns away everywhere, and pods whose bind the gate refuses, are handed to
  // `r` (null: none; the simulator and tests that drive kube-scheduler's retries themselves).
  // `r` must outlive the extender's use of it.
  void SetRequeuer(Requeuer* r) { requeuer_ = r; }

 private:
  struct PendingPod {
    sched::PodRequest request;
    // Nodes that passed the last filter and their 0..10 scores, in filter order: kube-scheduler
    // sends prioritize the same list, so a sequential compare finds them without hashing.
    std::vector<std::string> passed;
    std::vector<int> scores;
    // metadata.resourceVersion of the pod the filter was sent, when it was not yet bound: bind
    // writes its annotations on that version instead of reading the pod again.
    std::string resource_version;
  };
  struct Evaluation {
    bool ok = false;
    sched::Reason reason = sched::Reason::kNodeUnregistered;
    std::string message;
    int score = 0;
  };
  // GPU use held for nominated pods, per node (see Claim).
  using Claimed = std::unordered_map<std::string, std::map<std::string, sched::DeviceUsage>>;
  Evaluation Evaluate(const std::string& node, const sched::NodeState* state,
                      const sched::PodRequest& req, const std::string& ns,
                      const std::optional<sched::NamespaceQuota>& quota,
                      std::chrono::system_clock::time_point now,
                      const Claimed* claimed = nullptr) const;
  sched::NodeFit FitWithChecks(const sched::NodeState& node, const sched::NodeView& view,
                               const sched::PodRequest& req, const std::string& ns,
                               const std::optional<sched::NamespaceQuota>& quota,
                               std::chrono::system_clock::time_point now) const;
  void Remember(const std::string& uid, std::shared_ptr<const PendingPod> pending);
  std::shared_ptr<const PendingPod> Recall(const std::string& uid, bool erase);
  // Evaluate() for every name, in parallel for long lists.
  std::vector<Evaluation> EvaluateAll(const std::vector<std::string>& names,
                                      const sched::PodRequest& req, const std::string& ns,
                                      const Claimed* claimed = nullptr) const;

  // Room a preemption made for a pod. kube-scheduler nominates the node (status.
  // nominatedNodeName) and keeps its own resources there for the pod against pods of lower
  // priority; it cannot do that for vGPU shares, so the extender does: until the pod is bound or
  // gone (or kClaimTtl passed), a pod of lower priority is filtered on its nominated node as if
  // the nominee already held the GPUs the preempt verb planned for it there.
  struct Claim {
    std::string ns, name;
    int32_t priority = 0;
    std::chrono::steady_clock::time_point at;
    Claimed footprints;  // per answered node: the nominee's planned use there
  };
  static constexpr std::chrono::minutes kClaimTtl{5};
  // What the live claims of pods other than `uid`, of priority >= `priority`, hold on their
  // nominated nodes; drops claims whose pod is bound, gone or too old.
  Claimed ClaimedFor(const std::string& uid, int32_t priority);
  std::mutex claims_mu_;
  std::unordered_map<std::string, Claim> claims_;  // by pod uid
  std::atomic<size_t> claim_count_{0};

  ExtenderOptions options_;
  ClusterModel& model_;
  ClusterApi& api_;
  SchedulerMetrics& metrics_;
  NodeLocker locker_;
  sched::AdmissionConfig admission_;
  std::function<Status()> bind_gate_;
  Requeuer* requeuer_ = nullptr;

  // Marks ns/name as being bound; false when a bind of it is already running.
  bool BeginBind(const std::string& pod);
  void EndBind(const std::string& pod);

  // Pods whose bind is running: kube-scheduler gives up on a bind after its extender
  // httpTimeout and schedules the pod again, while ours may still finish; a second bind must not
  // place the pod again (it rewrote the devices of a pod the first bind had bound, e2e churn).
  std::mutex binding_mu_;
  std::set<std::string> binding_;

  // Pods between filter and bind (bounded; oldest forgotten first).
  std::mutex pending_mu_;
  std::unordered_map<std::string, std::shared_ptr<const PendingPod>> pending_;
  std::deque<std::string> pending_order_;
};

}  // namespace vgpu::scheduler
