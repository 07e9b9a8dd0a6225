#include "scheduler/extender.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <set>
#include <thread>

#include "core/base/log.h"
#include "core/codec/annotations.h"
#include "core/codec/base64.h"
#include "core/codec/node_lock.h"
#include "core/sched/fit.h"
#include "core/sched/preemption.h"

namespace vgpu::scheduler {

using nlohmann::json;
namespace anno = vgpu::annotations;
using Clock = std::chrono::steady_clock;

namespace {

constexpr size_t kMaxPending = 4096;

bool EqualsIgnoreCase(const std::string& a, const char* b) {
  size_t i = 0;
  for (; i < a.size() && b[i] != '\0'; ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return i == a.size() && b[i] == '\0';
}

// Go's encoding/json matches keys case-insensitively; kube-scheduler versions differ.
const json* Field(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto exact = obj.find(key);
  if (exact != obj.end()) return &*exact;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (EqualsIgnoreCase(it.key(), key)) return &*it;
  }
  return nullptr;
}

std::string StrField(const json& obj, const char* key) {
  const json* v = Field(obj, key);
  return v != nullptr && v->is_string() ? v->get<std::string>() : "";
}

std::string Meta(const json& obj, const char* key) {
  const json* m = Field(obj, "metadata");
  return m ? StrField(*m, key) : "";
}

// spec.nodeName: set once the pod is bound.
std::string PodNodeName(const json& pod) {
  const json* spec = Field(pod, "spec");
  return spec != nullptr ? StrField(*spec, "nodeName") : "";
}

// Node names from ExtenderArgs: NodeNames (nodeCacheCapable) or Nodes.items[].metadata.name.
bool CandidateNodes(const json& args, std::vector<std::string>& names, bool& had_nodes,
                    std::string& error) {
  had_nodes = false;
  if (const json* nn = Field(args, "nodenames"); nn != nullptr && !nn->is_null()) {
    if (!nn->is_array()) {
      error = "NodeNames is not a list of strings";
      return false;
    }
    for (const json& n : *nn) {
      if (!n.is_string()) {
        error = "NodeNames holds a non-string entry " + n.dump();
        return false;
      }
      names.push_back(n.get<std::string>());
    }
    return true;
  }
  if (const json* nodes = Field(args, "nodes"); nodes != nullptr && !nodes->is_null()) {
    const json* items = Field(*nodes, "items");
    if (items == nullptr || !items->is_array()) {
      error = "Nodes has no items list";
      return false;
    }
    had_nodes = true;
    for (const json& n : *items) names.push_back(Meta(n, "name"));
    return true;
  }
  error = "ExtenderArgs has neither NodeNames nor Nodes";
  return false;
}

std::string UnixSeconds() {
  return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count());
}

// Appends `s` as a JSON string; node names never need escaping, messages sometimes do.
void AppendJsonString(std::string& out, const std::string& s) {
  const bool plain = std::all_of(s.begin(), s.end(), [](char c) {
    return static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x7f &&
           c != '"' && c != '\\';
  });
  if (plain) {
    out += '"';
    out += s;
    out += '"';
  } else {
    out += json(s).dump();
  }
}

// The victims kube-scheduler proposes per node: NodeNameToMetaVictims (nodeCacheCapable: UIDs)
// or NodeNameToVictims (whole pods). Either map may be null; a node's entry may be null too.
struct ProposedVictims {
  std::vector<std::string> uids;
  int64_t pdb_violations = 0;  // kube-scheduler 1.20 always sends 0 here (it drops the count)
};
bool ReadProposedVictims(const json& args, std::map<std::string, ProposedVictims>& out,
                         std::string& error) {
  const json* meta = Field(args, "nodeNameToMetaVictims");
  const json* full = Field(args, "nodeNameToVictims");
  const bool use_meta = meta != nullptr && !meta->is_null();
  const json* victims = use_meta ? meta : full;
  if (victims == nullptr || victims->is_null()) {
    error = "ExtenderPreemptionArgs has neither NodeNameToMetaVictims nor NodeNameToVictims";
    return false;
  }
  if (!victims->is_object()) {
    error = "ExtenderPreemptionArgs victims are not a map of node name to victims";
    return false;
  }
  for (auto it = victims->begin(); it != victims->end(); ++it) {
    ProposedVictims& p = out[it.key()];
    if (it->is_null()) continue;
    if (!it->is_object()) {
      error = "victims of node " + it.key() + " are not an object";
      return false;
    }
    if (const json* n = Field(*it, "numPDBViolations"); n != nullptr && n->is_number_integer()) {
      p.pdb_violations = n->get<int64_t>();
    }
    const json* pods = Field(*it, "pods");
    if (pods == nullptr || pods->is_null()) continue;
    if (!pods->is_array()) {
      error = "victims of node " + it.key() + ": Pods is not a list";
      return false;
    }
    for (const json& pod : *pods) {
      const std::string uid = use_meta ? StrField(pod, "uid") : Meta(pod, "uid");
      if (uid.empty()) {
        error = "victims of node " + it.key() + " name a pod without a UID";
        return false;
      }
      p.uids.push_back(uid);
    }
  }
  return true;
}

int32_t PodPriority(const json& pod) {
  const json* spec = Field(pod, "spec");
  const json* p = spec != nullptr ? Field(*spec, "priority") : nullptr;
  return p != nullptr && p->is_number_integer() ? p->get<int32_t>() : 0;
}

VerbResult BadRequest(SchedulerMetrics& m, const std::string& message) {
  m.bad_requests.fetch_add(1, std::memory_order_relaxed);
  return {400, json{{"error", message}}};
}

}  // namespace

Extender::Extender(ExtenderOptions options, ClusterModel& model, ClusterApi& api,
                   SchedulerMetrics& metrics)
    : options_(std::move(options)),
      model_(model),
      api_(api),
      metrics_(metrics),
      locker_(api, options_.lock) {
  locker_.set_unlocked_at([this](const std::string& node) {
    std::optional<std::string> rv;
    model_.ReadNode(node, [&](const sched::NodeState& s) {
      if (!s.lock_value) rv = s.resource_version;
    });
    return rv;
  });
  locker_.set_held_by_live_owner([this](const std::string& node, const std::string& ns,
                                        const std::string& pod, std::string* holder) {
    std::optional<std::string> value;
    if (!model_.ReadNode(node, [&](const sched::NodeState& s) { value = s.lock_value; }) ||
        !value) {
      return false;
    }
    Result<codec::NodeLock> lock = codec::DecodeNodeLock(*value);
    if (!lock.ok() || !lock->has_owner() || (lock->pod_namespace == ns && lock->pod_name == pod) ||
        std::chrono::system_clock::now() - lock->time > options_.lock.stale_after) {
      return false;
    }
    std::optional<sched::PodState> owner = model_.FindPod(lock->pod_namespace, lock->pod_name);
    if (!owner || owner->terminal || owner->deleting ||
        owner->bind_phase == anno::kBindPhaseFailed ||
        owner->bind_phase == anno::kBindPhaseSuccess) {
      return false;  // looks stale: let the API-backed path check and take it over
    }
    *holder = lock->pod_namespace + "/" + lock->pod_name;
    return true;
  });
  admission_.names = options_.names;
  admission_.defaults = options_.defaults;
  admission_.scheduler_name = options_.scheduler_name;
  admission_.core_policy = options_.core_policy;
  admission_.overrides = options_.overrides;
  admission_.system_users = options_.system_users;
  admission_.mode = options_.webhook_mode;
  metrics_.webhook_audit.store(options_.webhook_mode == sched::WebhookMode::kAudit,
                               std::memory_order_relaxed);
}

void Extender::Remember(const std::string& uid, std::shared_ptr<const PendingPod> pending) {
  std::lock_guard lock(pending_mu_);
  auto [it, inserted] = pending_.insert_or_assign(uid, std::move(pending));
  if (inserted) pending_order_.push_back(uid);
  while (pending_order_.size() > kMaxPending) {
    pending_.erase(pending_order_.front());
    pending_order_.pop_front();
  }
}

std::shared_ptr<const Extender::PendingPod> Extender::Recall(const std::string& uid, bool erase) {
  std::lock_guard lock(pending_mu_);
  auto it = pending_.find(uid);
  if (it == pending_.end()) return nullptr;
  std::shared_ptr<const PendingPod> p = it->second;
  if (erase) pending_.erase(it);  // its pending_order_ entry is skipped when evicted
  return p;
}

sched::NodeFit Extender::FitWithChecks(const sched::NodeState& node, const sched::NodeView& view,
                                       const sched::PodRequest& req, const std::string& ns,
                                       const std::optional<sched::NamespaceQuota>& quota,
                                       std::chrono::system_clock::time_point now) const {
  sched::NodeFit fit;
  if (!node.inventory_error.empty()) {
    fit.reason = sched::Reason::kNodeUnregistered;
    fit.message = node.inventory_error;
    return fit;
  }
  if (options_.check_handshake && !sched::NodeAlive(node, now, options_.handshake_timeout)) {
    fit.reason = sched::Reason::kNodeHandshakeTimeout;
    fit.message =
        "NodeHandshakeTimeout: the node's device plugin has not answered the handshake "
        "(hami.io/node-handshake) within " +
        std::to_string(options_.handshake_timeout.count()) + "s";
    return fit;
  }
  fit = sched::FitPod(view, req);
  if (fit.ok && quota) {
    if (auto v =
            sched::QuotaViolation(quota->limit, quota->used, sched::ChargeOf(fit.allocation), ns)) {
      fit.ok = false;
      fit.reason = sched::Reason::kQuotaExceeded;
      fit.message = *v;
    }
  }
  return fit;
}

Extender::Evaluation Extender::Evaluate(const std::string& node, const sched::NodeState* s,
                                        const sched::PodRequest& req, const std::string& ns,
                                        const std::optional<sched::NamespaceQuota>& quota,
                                        std::chrono::system_clock::time_point now,
                                        const Claimed* claimed) const {
  Evaluation e;
  if (s != nullptr) {
    const sched::NodeView* view = &s->view;
    sched::NodeView held;
    if (claimed != nullptr) {
      if (auto c = claimed->find(node); c != claimed->end()) {
        held = s->view;  // a nominated pod's planned GPUs count as taken
        for (size_t g = 0; g < held.gpus.size() && g < held.usage.size(); ++g) {
          if (auto u = c->second.find(held.gpus[g].uuid); u != c->second.end())
            held.usage[g] += u->second;
        }
        view = &held;
      }
    }
    sched::NodeFit fit = FitWithChecks(*s, *view, req, ns, quota, now);
    e.ok = fit.ok;
    e.reason = fit.reason;
    e.message = std::move(fit.message);
    if (fit.ok) e.score = sched::NodeScore(s->view, fit.allocation, req.node_policy, req.weights);
  } else {
    e.reason = sched::Reason::kNodeUnregistered;
    e.message = "NodeUnregistered: node " + node + " is unknown to the vGPU scheduler";
  }
  return e;
}

std::vector<Extender::Evaluation> Extender::EvaluateAll(const std::vector<std::string>& names,
                                                        const sched::PodRequest& req,
                                                        const std::string& ns,
                                                        const Claimed* claimed) const {
  std::vector<Evaluation> out(names.size());
  const auto quota = model_.Quota(ns);
  const auto now = std::chrono::system_clock::now();
  model_.WithNodes(names, [&](const std::vector<const sched::NodeState*>& states) {
    const auto run = [&](size_t begin, size_t end) {
      for (size_t i = begin; i < end; ++i)
        out[i] = Evaluate(names[i], states[i], req, ns, quota, now, claimed);
    };
    constexpr size_t kPerThread = 512;  // below this a thread costs more than it saves
    const size_t threads = std::min<size_t>(std::max(1, options_.filter_parallelism),
                                            (names.size() + kPerThread - 1) / kPerThread);
    if (threads <= 1) {
      run(0, names.size());
      return;
    }
    std::vector<std::thread> workers;
    const size_t chunk = (names.size() + threads - 1) / threads;
    for (size_t t = 1; t < threads; ++t) {
      workers.emplace_back(run, std::min(names.size(), t * chunk),
                           std::min(names.size(), (t + 1) * chunk));
    }
    run(0, std::min(names.size(), chunk));
    for (auto& w : workers) w.join();
  });
  return out;
}

Extender::Claimed Extender::ClaimedFor(const std::string& uid, int32_t priority) {
  Claimed out;
  if (claim_count_.load(std::memory_order_acquire) == 0) return out;  // the usual case
  std::lock_guard lock(claims_mu_);
  const auto now = Clock::now();
  for (auto it = claims_.begin(); it != claims_.end();) {
    const Claim& c = it->second;
    std::optional<sched::PodState> pod = model_.FindPod(c.ns, c.name);
    if (now - c.at > kClaimTtl || !pod || pod->uid != it->first || !pod->node.empty() ||
        pod->terminal || pod->deleting) {
      it = claims_.erase(it);  // bound (or being bound), gone, or stale: nothing to hold
      continue;
    }
    if (it->first != uid && c.priority >= priority && !pod->nominated_node.empty()) {
      if (auto f = c.footprints.find(pod->nominated_node); f != c.footprints.end()) {
        for (const auto& [gpu, use] : f->second) out[f->first][gpu] += use;
      }
    }
    ++it;
  }
  claim_count_.store(claims_.size(), std::memory_order_release);
  return out;
}

VerbResult Extender::Filter(const json& args) {
  const auto start = Clock::now();
  if (!args.is_object()) return BadRequest(metrics_, "ExtenderArgs must be a JSON object");
  const json* pod = Field(args, "pod");
  if (pod == nullptr || !pod->is_object()) return BadRequest(metrics_, "ExtenderArgs has no Pod");
  std::vector<std::string> names;
  bool had_nodes = false;
  std::string error;
  if (!CandidateNodes(args, names, had_nodes, error)) return BadRequest(metrics_, error);

  const std::string ns = Meta(*pod, "namespace");
  const std::string pod_name = ns + "/" + Meta(*pod, "name");
  json result = {{"nodenames", json::array()}, {"failedNodes", json::object()}, {"error", ""}};
  std::string raw;
  Result<sched::PodRequest> req = sched::ParsePodRequest(*pod, options_.names, options_.defaults);
  if (!req.ok()) {
    result["error"] = "pod " + pod_name + ": " + req.status().message();
    metrics_.filter.Observe(Clock::now() - start);
    return {200, result};
  }
  auto pending = std::make_shared<PendingPod>();
  if (!req->wants_gpu()) {
    result["nodenames"] = names;  // not ours to judge
  } else {
    const Claimed claimed = ClaimedFor(Meta(*pod, "uid"), PodPriority(*pod));
    std::vector<Evaluation> evals =
        EvaluateAll(names, *req, ns, claimed.empty() ? nullptr : &claimed);
    pending->passed.reserve(names.size());
    pending->scores.reserve(names.size());
    std::string failed_text;
    for (size_t i = 0; i < names.size(); ++i) {
      Evaluation& e = evals[i];
      if (e.ok) {
        pending->passed.push_back(names[i]);
        pending->scores.push_back(e.score);
      } else {
        metrics_.Reject(e.reason);
        failed_text += failed_text.empty() ? "" : ",";
        AppendJsonString(failed_text, names[i]);
        failed_text += ':';
        AppendJsonString(failed_text, e.message);
      }
    }
    if (!had_nodes) {
      std::string& out = raw;
      out.reserve(pending->passed.size() * 16 + failed_text.size() + 64);
      out += "{\"nodenames\":[";
      for (size_t i = 0; i < pending->passed.size(); ++i) {
        if (i) out += ',';
        AppendJsonString(out, pending->passed[i]);
      }
      out += "],\"failedNodes\":{" + failed_text + "},\"error\":\"\"}";
    } else {
      result["nodenames"] = pending->passed;
      result["failedNodes"] = json::parse("{" + failed_text + "}");
    }
  }
  if (had_nodes) {
    // Callers that sent whole Node objects get the passing ones back the same way.
    const json* items = Field(*Field(args, "nodes"), "items");
    json kept = json::array();
    std::set<std::string> ok(result["nodenames"].begin(), result["nodenames"].end());
    for (const json& n : *items) {
      if (ok.count(Meta(n, "name"))) kept.push_back(n);
    }
    result["nodes"] = {{"items", std::move(kept)}};
  }
  const std::string uid = Meta(*pod, "uid");
  if (!uid.empty() && req->wants_gpu()) {
    // Turned away everywhere: send it back to kube-scheduler once capacity frees (requeue.h).
    if (pending->passed.empty() && requeuer_ != nullptr)
      requeuer_->TurnedAway(uid, ns, Meta(*pod, "name"));
    pending->request = std::move(*req);
    if (PodNodeName(*pod).empty()) pending->resource_version = Meta(*pod, "resourceVersion");
    Remember(uid, std::move(pending));
  }
  metrics_.filter.Observe(Clock::now() - start);
  if (!raw.empty()) return VerbResult::FromText(200, std::move(raw));
  return {200, result};
}

VerbResult Extender::Prioritize(const json& args) {
  const auto start = Clock::now();
  if (!args.is_object()) return BadRequest(metrics_, "ExtenderArgs must be a JSON object");
  const json* pod = Field(args, "pod");
  if (pod == nullptr || !pod->is_object()) return BadRequest(metrics_, "ExtenderArgs has no Pod");
  std::vector<std::string> names;
  bool had_nodes = false;
  std::string error;
  if (!CandidateNodes(args, names, had_nodes, error)) return BadRequest(metrics_, error);
  const std::string ns = Meta(*pod, "namespace");
  std::shared_ptr<const PendingPod> pending = Recall(Meta(*pod, "uid"), /*erase=*/false);
  std::optional<sched::PodRequest> req;
  if (pending) {
    req = pending->request;
  } else {
    Result<sched::PodRequest> parsed =
        sched::ParsePodRequest(*pod, options_.names, options_.defaults);
    if (!parsed.ok())
      return BadRequest(metrics_,
                        "pod " + ns + "/" + Meta(*pod, "name") + ": " + parsed.status().message());
    req = std::move(*parsed);
  }
  std::vector<int> scores(names.size(), 0);
  std::vector<std::string> missing;
  std::vector<size_t> missing_at;
  if (req->wants_gpu()) {
    if (pending && pending->passed == names) {
      scores = pending->scores;  // the usual call: exactly the nodes filter passed
    } else {
      std::unordered_map<std::string_view, int> cached;
      if (pending) {
        cached.reserve(pending->passed.size());
        for (size_t i = 0; i < pending->passed.size(); ++i) {
          cached.emplace(pending->passed[i], pending->scores[i]);
        }
      }
      for (size_t i = 0; i < names.size(); ++i) {
        auto it = cached.find(names[i]);
        if (it != cached.end()) {
          scores[i] = it->second;
        } else {
          missing.push_back(names[i]);
          missing_at.push_back(i);
        }
      }
    }
  }
  if (!missing.empty()) {
    std::vector<Evaluation> evals = EvaluateAll(missing, *req, ns);
    for (size_t k = 0; k < missing.size(); ++k)
      scores[missing_at[k]] = evals[k].ok ? evals[k].score : 0;
  }
  std::string out;
  out.reserve(names.size() * 32 + 2);
  out += '[';
  for (size_t i = 0; i < names.size(); ++i) {
    if (i) out += ',';
    out += "{\"host\":";
    AppendJsonString(out, names[i]);
    out += ",\"score\":" + std::to_string(scores[i]) + "}";
  }
  out += ']';
  metrics_.prioritize.Observe(Clock::now() - start);
  return VerbResult::FromText(200, std::move(out));
}

bool Extender::BeginBind(const std::string& pod) {
  std::lock_guard lock(binding_mu_);
  return binding_.insert(pod).second;
}

void Extender::EndBind(const std::string& pod) {
  std::lock_guard lock(binding_mu_);
  binding_.erase(pod);
}

VerbResult Extender::Bind(const json& args) {
  const auto start = Clock::now();
  if (!args.is_object()) return BadRequest(metrics_, "ExtenderBindingArgs must be a JSON object");
  const std::string name = StrField(args, "podName");
  const std::string ns = StrField(args, "podNamespace");
  std::string uid = StrField(args, "podUID");
  const std::string node = StrField(args, "node");
  if (name.empty() || ns.empty() || node.empty()) {
    return BadRequest(metrics_, "ExtenderBindingArgs needs PodName, PodNamespace and Node");
  }
  const std::string who = ns + "/" + name;
  const auto fail = [&](const std::string& message) {
    metrics_.bind_failures.fetch_add(1, std::memory_order_relaxed);
    metrics_.bind.Observe(Clock::now() - start);
    log::Write(options_.bind_failure_level, "bind failed",
               {{"pod", who}, {"node", node}, {"error", message}});
    return VerbResult{200, json{{"error", message}}};
  };
  if (bind_gate_) {
    // kube-scheduler retries a failed bind; the replica beside the active kube-scheduler leads.
    // It retries from its unschedulable queue, up to 60 s later, unless the pod is updated: the
    // requeuer does that once the gate opens (requeue.h).
    if (Status gate = bind_gate_(); !gate.ok()) {
      if (requeuer_ != nullptr) requeuer_->RefusedByGate(uid, ns, name);
      return fail("bind " + who + ": " + gate.message());
    }
  }

  if (!BeginBind(who)) {
    return fail("bind " + who + " to " + node +
                ": an earlier bind of this pod is still running (kube-scheduler stopped waiting "
                "for it after its extender httpTimeout); the pod is not placed twice");
  }
  struct BindDone {
    Extender* extender;
    std::string pod;
    ~BindDone() { extender->EndBind(pod); }
  } const bind_done{this, who};

  std::shared_ptr<const PendingPod> pending = Recall(uid, /*erase=*/true);
  // kube-scheduler 1.20 may call bind again for a pod it has already bound: its queue takes the
  // pod back on our own annotation patch while the first bind runs, and a later cycle's assume
  // succeeds once the first has finished (seen in e2e churn). Placing such a pod again would
  // rewrite the devices of a running pod and drop its usage from the model until the watch
  // caught up; the GPU it left could be given away. Two ways to rule that out:
  // - the filter saw the pod unbound at some resourceVersion and this extender has neither
  //   placed nor reserved it since (the model's reservation checks): the annotation patch below
  //   carries that version, so the API server refuses it (409) if the pod changed since. One API
  //   call fewer per bind.
  // - otherwise a fresh read of the pod (a GET is a quorum read) before anything is written.
  bool guarded = pending != nullptr && !pending->resource_version.empty() && !uid.empty();
  std::optional<json> read;  // the fresh read, when one was made
  const auto read_unbound = [&]() -> std::optional<VerbResult> {
    Result<json> pod = api_.GetPod(ns, name);
    if (!pod.ok()) return fail("bind " + who + ": " + pod.status().ToString());
    if (const std::string bound = PodNodeName(*pod); !bound.empty()) {
      return fail("bind " + who + " to " + node + ": the pod is already bound to " + bound);
    }
    read = std::move(*pod);
    return std::nullopt;
  };
  if (!guarded) {
    if (auto failed = read_unbound()) return *failed;
    if (uid.empty()) uid = Meta(*read, "uid");
  }
  sched::PodRequest req;
  if (pending) {
    req = pending->request;
  } else {
    // Not seen by this process's filter (restart, or another replica filtered).
    Result<sched::PodRequest> parsed =
        sched::ParsePodRequest(*read, options_.names, options_.defaults);
    if (!parsed.ok()) return fail("bind " + who + ": " + parsed.status().message());
    req = std::move(*parsed);
  }
  if (uid.empty()) uid = who;

  if (!req.wants_gpu()) {
    Status s = api_.BindPod(ns, name, uid, node);
    if (!s.ok()) return fail("bind " + who + " to " + node + ": " + s.ToString());
    metrics_.bind.Observe(Clock::now() - start);
    log::VInfo(2, "bind", {{"pod", who}, {"node", node}, {"devices", "none"}});
    return {200, json{{"error", ""}}};
  }

  const auto quota = model_.Quota(ns);
  const auto now = std::chrono::system_clock::now();
  const auto fit = [&](const sched::NodeState& s) {
    return FitWithChecks(s, s.view, req, ns, quota, now);
  };
  ClusterModel::ReserveResult reserved =
      model_.Reserve(uid, ns, name, node, fit, /*only_if_unplaced=*/guarded);
  if (reserved.already_placed) {
    // Placed or reserved by an earlier bind (which may have failed since): ask the API server.
    guarded = false;
    if (auto failed = read_unbound()) return *failed;
    reserved = model_.Reserve(uid, ns, name, node, fit);
  }
  if (!reserved.ok) return fail("bind " + who + " to " + node + ": " + reserved.message);

  int takeovers = 0;
  Status locked = locker_.Acquire(node, ns, name, &takeovers);
  metrics_.lock_takeovers.fetch_add(static_cast<uint64_t>(takeovers), std::memory_order_relaxed);
  if (!locked.ok()) {
    model_.Unreserve(uid);
    // kube-scheduler parks the pod until its 60-s flush: the requeuer sends it back (requeue.h).
    if (requeuer_ != nullptr && locked.code() == StatusCode::kDeadlineExceeded)
      requeuer_->RefusedByLock(uid, ns, name);
    return fail("bind " + who + " to " + node + ": " + locked.message());
  }

  if (bind_gate_) {
    // Leadership may have ended while this bind waited for the lock: write nothing then.
    if (Status gate = bind_gate_(); !gate.ok()) {
      model_.Unreserve(uid);
      (void)locker_.Release(node, ns, name);
      if (requeuer_ != nullptr) requeuer_->RefusedByGate(uid, ns, name);
      return fail("bind " + who + " to " + node + ": " + gate.message());
    }
  }
  const std::string devices = sched::EncodeAllocation(reserved.allocation);
  const std::string t = UnixSeconds();
  json patch = {{"metadata",
                 {{"annotations",
                   {{std::string(anno::kVgpuNode), node},
                    {std::string(anno::kVgpuTime), t},
                    {std::string(anno::kDevicesAllocated), devices},
                    {std::string(anno::kDevicesToAllocate), devices},
                    {std::string(anno::kBindPhase), std::string(anno::kBindPhaseAllocating)},
                    {std::string(anno::kBindTime), t}}},
                  {"labels", {{std::string(anno::kVgpuNode), node}}}}}};
  Status s;
  if (guarded) {
    json on_version = patch;
    on_version["metadata"]["resourceVersion"] = pending->resource_version;
    s = api_.MergePatchPod(ns, name, on_version);
    if (s.code() == StatusCode::kFailedPrecondition) {
      // The pod changed since the filter: read it, and write unguarded only if still unbound.
      Result<json> fresh = api_.GetPod(ns, name);
      s = fresh.ok() ? Status::Ok() : fresh.status();
      if (fresh.ok()) {
        if (const std::string bound = PodNodeName(*fresh); !bound.empty()) {
          model_.Unreserve(uid);
          (void)locker_.Release(node, ns, name);
          return fail("bind " + who + " to " + node + ": the pod is already bound to " + bound);
        }
        s = api_.MergePatchPod(ns, name, patch);
      }
    }
  } else {
    s = api_.MergePatchPod(ns, name, patch);
  }
  if (s.ok()) s = api_.BindPod(ns, name, uid, node);
  if (!s.ok() && s.code() != StatusCode::kNotFound) {
    // The binding may have gone through although the call failed (a timeout, a retried POST
    // answered 409): then the pod holds these devices, and unreserving or marking it failed
    // would free them in the model while it runs.
    if (Result<json> now = api_.GetPod(ns, name);
        now.ok() && PodNodeName(*now) == node &&
        sched::ObjectAnnotation(*now, anno::kDevicesAllocated) == devices) {
      log::Warn("bind call failed but the pod is bound",
                {{"pod", who}, {"node", node}, {"error", s.ToString()}});
      s = Status::Ok();
    }
  }
  if (!s.ok()) {
    // Leave nothing behind: no reservation, no lock, and a pod that says its bind failed.
    model_.Unreserve(uid);
    (void)api_.MergePatchPod(
        ns, name,
        {{"metadata",
          {{"annotations",
            {{std::string(anno::kBindPhase), std::string(anno::kBindPhaseFailed)}}}}}});
    (void)locker_.Release(node, ns, name);
    return fail("bind " + who + " to " + node + ": " + s.ToString());
  }
  if (requeuer_ != nullptr) requeuer_->Forget(uid);
  const auto took = Clock::now() - start;
  metrics_.bind.Observe(took);
  std::string used;  // per chosen GPU: slots, MiB and cores taken with this pod counted
  for (const auto& [uuid, u] : reserved.usage_after) {
    if (!used.empty()) used += ' ';
    used += uuid + ":" + std::to_string(u.slots) + "/" + std::to_string(u.mem_mib) + "/" +
            std::to_string(u.cores);
  }
  log::VInfo(1, "bind",
             {{"pod", who},
              {"node", node},
              {"devices", devices},
              {"used", used},
              {"ms", std::chrono::duration_cast<std::chrono::milliseconds>(took).count()}});
  return {200, json{{"error", ""}}};
}

VerbResult Extender::Preempt(const json& args) {
  const auto start = Clock::now();
  if (!args.is_object()) {
    return BadRequest(metrics_, "ExtenderPreemptionArgs must be a JSON object");
  }
  const json* pod = Field(args, "pod");
  if (pod == nullptr || !pod->is_object()) {
    return BadRequest(metrics_, "ExtenderPreemptionArgs has no Pod");
  }
  std::map<std::string, ProposedVictims> proposed;
  std::string error;
  if (!ReadProposedVictims(args, proposed, error)) return BadRequest(metrics_, error);
  const std::string ns = Meta(*pod, "namespace");
  const std::string who = ns + "/" + Meta(*pod, "name");
  const std::string uid = Meta(*pod, "uid");
  sched::PodRequest req;
  if (std::shared_ptr<const PendingPod> pending = Recall(uid, /*erase=*/false)) {
    req = pending->request;
  } else {
    Result<sched::PodRequest> parsed =
        sched::ParsePodRequest(*pod, options_.names, options_.defaults);
    if (!parsed.ok()) return BadRequest(metrics_, "pod " + who + ": " + parsed.status().message());
    req = std::move(*parsed);
  }

  struct NodeAnswer {
    std::vector<std::string> victims;
    int64_t pdb_violations = 0;
  };
  std::map<std::string, NodeAnswer> answers;
  // A pod already on a node has nothing to preempt for. kube-scheduler 1.20.2 schedules a bound
  // pod again when an update re-queues it ("pod ... is in the cache, so can't be assumed"), and
  // its PostFilter then preempted lower-priority pods on the pod's own node (e2e scenario 16,
  // 2026-12-07). Whether the request shows the binding or only our pod watch does: no node.
  const std::optional<sched::PodState> known = model_.FindPod(ns, Meta(*pod, "name"));
  const bool placed = !PodNodeName(*pod).empty() ||
                      (known && !uid.empty() && known->uid == uid && known->HoldsDevices());
  if (placed) {
    log::VInfo(1, "preempt: pod already placed, no eviction", {{"pod", who}});
  } else if (!req.wants_gpu()) {
    // Not ours to judge: kube-scheduler's own victims stand.
    for (auto& [node, p] : proposed) answers[node] = {p.uids, p.pdb_violations};
  } else {
    Result<json> pdb_list = api_.ListDisruptionBudgets();
    if (!pdb_list.ok()) {
      // Evicting without knowing the budgets could break one: this cycle preempts nothing, and
      // kube-scheduler tries again with the pod's next attempt.
      metrics_.preempt.Observe(Clock::now() - start);
      log::Warn("preempt: cannot read PodDisruptionBudgets",
                {{"pod", who}, {"error", pdb_list.status().ToString()}});
      return {503, json{{"error", "preempt " + who + ": reading PodDisruptionBudgets: " +
                                      pdb_list.status().ToString()}}};
    }
    std::vector<sched::DisruptionBudget> budgets;
    if (const json* items = Field(*pdb_list, "items"); items != nullptr && items->is_array()) {
      for (const json& item : *items) {
        // kube-scheduler skips a budget whose selector it cannot read; so do we.
        if (Result<sched::DisruptionBudget> b = sched::ReadDisruptionBudget(item); b.ok()) {
          budgets.push_back(std::move(*b));
        }
      }
    }
    const int32_t priority = PodPriority(*pod);
    const auto quota = model_.Quota(ns);
    const auto now = std::chrono::system_clock::now();
    std::vector<std::string> names;
    names.reserve(proposed.size());
    for (const auto& [node, p] : proposed) names.push_back(node);
    Claimed planned;             // node -> where the pod goes there once its victims are gone
    bool freed_already = false;  // some node takes the pod once its leaving pods are gone
    model_.WithNodePods(names, [&](const std::vector<const sched::NodeState*>& states,
                                   const std::vector<std::vector<ClusterModel::PlacedPod>>& pods) {
      for (size_t i = 0; i < names.size(); ++i) {
        const sched::NodeState* s = states[i];
        if (s == nullptr || !s->inventory_error.empty() ||
            (options_.check_handshake && !sched::NodeAlive(*s, now, options_.handshake_timeout))) {
          continue;  // no vGPU pod goes there, evictions or not
        }
        const ProposedVictims& theirs = proposed[names[i]];
        const std::set<std::string> chosen(theirs.uids.begin(), theirs.uids.end());
        std::vector<sched::PreemptionPod> candidates;
        std::map<std::string, std::pair<int32_t, std::string>> rank;  // uid -> priority, start
        for (const ClusterModel::PlacedPod& placed : pods[i]) {
          const sched::PodState& ps = *placed.state;
          rank[ps.uid] = {ps.priority, ps.start_time};
          if (placed.footprint->empty() || ps.uid == uid) continue;
          sched::PreemptionPod c;
          c.uid = ps.uid;
          c.ns = ps.ns;
          c.name = ps.name;
          c.priority = ps.priority;
          c.start_time = ps.start_time;
          c.labels = ps.labels;
          c.footprint = *placed.footprint;
          c.leaving = ps.deleting || chosen.count(ps.uid) != 0;
          c.evictable = !placed.reserved;
          candidates.push_back(std::move(c));
        }
        sched::VictimChoice choice =
            sched::SelectVictims(s->view, req, priority, candidates, budgets);
        if (!choice.ok) {
          log::VInfo(2, "preempt: node cannot help",
                     {{"pod", who}, {"node", names[i]}, {"why", choice.message}});
          continue;
        }
        if (quota && sched::QuotaViolation(quota->limit, quota->used,
                                           sched::ChargeOf(choice.allocation), ns)) {
          continue;  // evictions on this node would not let the namespace's quota admit it
        }
        NodeAnswer a;
        a.victims = theirs.uids;
        a.victims.insert(a.victims.end(), choice.victims.begin(), choice.victims.end());
        // kube-scheduler 1.20 picks a node with an empty victim list at once and, with several
        // such nodes, reads Pods[0] of each: a node needing no eviction is left out (the pod is
        // placed there by its next attempt once the leaving pods are gone).
        if (a.victims.empty()) {
          freed_already = true;
          continue;
        }
        // Most important first: kube-scheduler reads the first victim as the highest priority.
        const auto rank_of = [&rank](const std::string& v) {
          const auto r = rank.find(v);
          return r != rank.end() ? r->second : std::pair<int32_t, std::string>{0, ""};
        };
        std::stable_sort(a.victims.begin(), a.victims.end(),
                         [&](const std::string& x, const std::string& y) {
                           const auto [px, sx] = rank_of(x);
                           const auto [py, sy] = rank_of(y);
                           return px != py ? px > py : sx < sy;
                         });
        a.pdb_violations = theirs.pdb_violations + choice.pdb_violations;
        planned[names[i]] = sched::PodFootprint(choice.allocation);
        answers[names[i]] = std::move(a);
      }
    });
    if (freed_already && !answers.empty()) {
      // The room this pod needs is being freed already (its earlier victims are leaving): naming
      // victims on another node would evict a second set for one pod. kube-scheduler 1.20.2 runs
      // PostFilter again on each attempt while the victims terminate, and did just that in e2e
      // scenario 16 (2026-12-07: four pods evicted for one). Nothing this cycle; the pod binds
      // where the room is once its victims are gone.
      log::VInfo(1, "preempt: room already being freed, no further eviction", {{"pod", who}});
      answers.clear();
    }
    // kube-scheduler 1.20 drops NumPDBViolations from an extender's answer: only the nodes that
    // break the fewest budgets are offered, so it cannot pick one that breaks more.
    int64_t fewest = std::numeric_limits<int64_t>::max();
    for (const auto& [node, a] : answers) fewest = std::min(fewest, a.pdb_violations);
    for (auto it = answers.begin(); it != answers.end();) {
      it = it->second.pdb_violations > fewest ? answers.erase(it) : std::next(it);
    }
    if (!answers.empty() && !uid.empty()) {
      // kube-scheduler picks one of these nodes and nominates it: hold the room there (Claim).
      Claim c{ns, Meta(*pod, "name"), priority, Clock::now(), {}};
      for (const auto& [node, a] : answers) c.footprints[node] = std::move(planned[node]);
      std::lock_guard lock(claims_mu_);
      claims_[uid] = std::move(c);
      claim_count_.store(claims_.size(), std::memory_order_release);
    }
  }
  json out = json::object();
  uint64_t named = 0;
  for (const auto& [node, a] : answers) {
    json pods = json::array();
    for (const std::string& v : a.victims) pods.push_back({{"uid", v}});
    named += a.victims.size();
    out[node] = {{"pods", std::move(pods)}, {"numPDBViolations", a.pdb_violations}};
  }
  metrics_.preempt_victims.fetch_add(named, std::memory_order_relaxed);
  metrics_.preempt.Observe(Clock::now() - start);
  log::VInfo(1, "preempt",
             {{"pod", who},
              {"candidates", std::to_string(proposed.size())},
              {"nodes", std::to_string(answers.size())},
              {"answer", out.dump()}});
  return {200, json{{"nodeNameToMetaVictims", std::move(out)}}};
}

namespace {

// "<namespace>/<name>" of the pod a review is about, for the audit log. Pods of controllers have
// no name yet at creation: their generateName, with a "*".
std::string AuditedPodName(const json& request) {
  const json* object = Field(request, "object");
  std::string ns = object != nullptr ? Meta(*object, "namespace") : "";
  if (ns.empty()) ns = StrField(request, "namespace");
  std::string name = object != nullptr ? Meta(*object, "name") : "";
  if (name.empty() && object != nullptr) name = Meta(*object, "generateName") + "*";
  return ns + "/" + name;
}

}  // namespace

VerbResult Extender::Admit(const json& review) {
  if (!review.is_object()) return BadRequest(metrics_, "AdmissionReview must be a JSON object");
  const json* request = Field(review, "request");
  if (request == nullptr || !request->is_object()) {
    return BadRequest(metrics_, "AdmissionReview has no request");
  }
  std::string api_version = StrField(review, "apiVersion");
  if (api_version.empty()) api_version = "admission.k8s.io/v1";
  if (api_version != "admission.k8s.io/v1" && api_version != "admission.k8s.io/v1beta1") {
    return BadRequest(metrics_, "unsupported AdmissionReview apiVersion " + api_version +
                                    " (want admission.k8s.io/v1 or v1beta1)");
  }
  json response = {{"uid", StrField(*request, "uid")}, {"allowed", true}};
  const std::string operation = StrField(*request, "operation");
  const json* kind = Field(*request, "kind");
  const json* object = Field(*request, "object");
  const bool is_pod = kind != nullptr && StrField(*kind, "kind") == "Pod";
  const auto answer = [&](const sched::AdmissionDecision& d) {
    response["allowed"] = d.allowed;
    if (!d.allowed) {
      metrics_.webhook_denied.fetch_add(1, std::memory_order_relaxed);
      response["status"] = {{"code", 403}, {"reason", "Forbidden"}, {"message", d.message}};
    } else {
      metrics_.webhook_allowed.fetch_add(1, std::memory_order_relaxed);
      if (!d.patch.empty()) {
        response["patchType"] = "JSONPatch";
        response["patch"] = codec::Base64Encode(d.patch.dump());
      }
      if (!d.warnings.empty()) response["warnings"] = d.warnings;
      for (const sched::AuditFinding& f : d.would_deny) {
        // Audit mode: admitted, but the operator must find it before switching to enforce.
        metrics_.WouldDeny(f.reason);
        log::Warn("webhook audit: admitted a pod that enforce mode denies",
                  {{"pod", AuditedPodName(*request)},
                   {"uid", StrField(*request, "uid")},
                   {"reason", sched::AuditReasonName(f.reason)},
                   {"message", f.message}});
      }
    }
  };
  if (operation == "UPDATE" && is_pod) {
    // Between the bind and Allocate the device plugin trusts what the bind wrote: only the
    // system's own accounts may change it (docs/security.md).
    if (object == nullptr || !object->is_object()) {
      return BadRequest(metrics_, "AdmissionReview request for a Pod UPDATE has no object");
    }
    const json* old_object = Field(*request, "oldObject");
    const json* user = Field(*request, "userInfo");
    answer(sched::AdmitPodUpdate(old_object != nullptr ? *old_object : json(), *object,
                                 user != nullptr ? StrField(*user, "username") : "", admission_));
    return {200,
            json{{"apiVersion", api_version}, {"kind", "AdmissionReview"}, {"response", response}}};
  }
  if (!operation.empty() && operation != "CREATE") {
    return {200,
            json{{"apiVersion", api_version}, {"kind", "AdmissionReview"}, {"response", response}}};
  }
  if (is_pod && object != nullptr && object->is_object()) {
    json pod = *object;
    std::string ns = Meta(pod, "namespace");
    if (ns.empty()) ns = StrField(*request, "namespace");
    if (ns.empty()) ns = "default";
    if (!pod.contains("metadata") || !pod["metadata"].is_object()) pod["metadata"] = json::object();
    pod["metadata"]["namespace"] = ns;
    answer(sched::AdmitPod(pod, admission_, model_.Quota(ns)));
  } else if (is_pod) {
    return BadRequest(metrics_, "AdmissionReview request for a Pod has no object");
  }
  return {200,
          json{{"apiVersion", api_version}, {"kind", "AdmissionReview"}, {"response", response}}};
}

}  // namespace vgpu::scheduler
