#include "sim/cluster/runner.h"

#include <condition_variable>
#include <deque>
#include <limits>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

#include "core/base/log.h"
#include "core/codec/annotations.h"
#include "core/codec/pod_devices.h"
#include "sim/apiserver/api_server.h"
#include "sim/cluster/admission_ahead.h"
#include "sim/cluster/event_clock.h"
#include "sim/cluster/extender_client.h"
#include "sim/cluster/kubelet_hub.h"
#include "sim/cluster/live_cluster.h"
#include "sim/cluster/report.h"
#include "sim/cluster/scheduling_queue.h"
#include "sim/cluster/sim_node.h"
#include "sim/cluster/snapshot.h"

namespace vgpu::sim {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// Admissions the webhook thread may run ahead of the loop. Not measured; enough to cover a burst
// of arrivals between two scheduling attempts, few enough that answers do not pile up unread
// (pods are still created at their arrival).
constexpr size_t kAdmissionLookahead = 16;

double MillisSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

enum class PodPhase { kWaiting, kQueued, kBinding, kBound, kCompleted, kDenied, kPreempted };

struct BindJob {
  size_t idx;
  std::string ns, name, uid, node;
  Clock::time_point started;  // the scheduling attempt's start (filter)
};

struct BindDone {
  BindJob job;
  Status status;
  std::vector<double> bind_ms;
  double schedule_ms = 0;
};

// One thread posting binds in order, so the scheduling loop does not wait for them.
class Binder {
 public:
  Binder(std::unique_ptr<ExtenderClient> client, int attempts)
      : client_(std::move(client)), attempts_(attempts), thread_([this] { Loop(); }) {}
  ~Binder() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void Submit(BindJob job) {
    std::lock_guard lock(mu_);
    jobs_.push_back(std::move(job));
    ++in_flight_;
    cv_.notify_all();
  }
  int in_flight() {
    std::lock_guard lock(mu_);
    return in_flight_;
  }
  // Finished binds; with `wait`, blocks until every submitted bind has finished.
  std::vector<BindDone> Take(bool wait) {
    std::unique_lock lock(mu_);
    if (wait) done_cv_.wait(lock, [&] { return in_flight_ == 0; });
    std::vector<BindDone> out = std::move(done_);
    done_.clear();
    return out;
  }

 private:
  void Loop() {
    while (true) {
      BindJob job;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
        if (jobs_.empty()) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      BindDone d{job, Status::Ok(), {}, 0};
      for (int attempt = 0; attempt < attempts_; ++attempt) {
        const auto t = Clock::now();
        d.status = client_->Bind(job.ns, job.name, job.uid, job.node);
        d.bind_ms.push_back(MillisSince(t));
        if (d.status.ok() || d.status.code() != StatusCode::kUnavailable) break;
      }
      d.schedule_ms = MillisSince(job.started);
      {
        std::lock_guard lock(mu_);
        done_.push_back(std::move(d));
        --in_flight_;
      }
      done_cv_.notify_all();
    }
  }

  std::unique_ptr<ExtenderClient> client_;
  int attempts_;
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  std::deque<BindJob> jobs_;
  std::vector<BindDone> done_;
  int in_flight_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

struct PodRun {
  PodPhase phase = PodPhase::kWaiting;
  json object;  // as admitted
  std::string uid;
  int placement = -1;  // index into RunResult::placements
};

std::string Quantity(int64_t v) {
  return std::to_string(v);
}

// "0/3 nodes are available: 2 CardInsufficientMemory, 1 CardTypeMismatch" like kube-scheduler.
std::string SummariseFailures(const FilterResult& f, size_t nodes) {
  std::map<std::string, int> counts;
  for (const auto& [node, reason] : f.failed) ++counts[reason];
  std::string out = "0/" + std::to_string(nodes) + " nodes are available";
  std::string sep = ": ";
  for (const auto& [reason, n] : counts) {
    out.append(sep).append(std::to_string(n)).append(" ").append(reason);
    sep = ", ";
  }
  return out;
}

std::vector<AllocatedVgpu> DevicesOf(const json& pod) {
  std::vector<AllocatedVgpu> out;
  const json::json_pointer ptr("/metadata/annotations/hami.io~1vgpu-devices-allocated");
  if (!pod.contains(ptr) || !pod.at(ptr).is_string()) return out;
  auto devs = codec::DecodePodDevices(pod.at(ptr).get<std::string>());
  if (!devs.ok()) return out;
  for (const auto& c : *devs) {
    for (const auto& d : c) out.push_back(AllocatedVgpu{d.uuid, d.mem_mib, d.cores});
  }
  return out;
}

class Run {
 public:
  Run(const Scenario& sc, const PolicyPair& policy, const RunOptions& o)
      : sc_(sc), policy_(policy), o_(o), pods_(sc.pods.size()) {}

  Result<RunResult> Execute() {
    auto quotas = QuotaStatesOf(sc_.quotas);
    if (!quotas.ok()) return quotas.status();
    quotas_ = std::move(*quotas);
    VGPU_RETURN_IF_ERROR(StartCluster());
    result_.scenario = sc_.name;
    result_.policy = policy_;
    result_.pods_total = static_cast<int>(sc_.pods.size());
    for (size_t i = 0; i < sc_.pods.size(); ++i) {
      clock_.Add(sc_.pods[i].arrival_s, SimEventKind::kArrival, i);
      lowest_priority_ = std::min(lowest_priority_, sc_.pods[i].priority.value_or(0));
    }
    cordon_active_.assign(sc_.cordons.size(), false);
    for (size_t i = 0; i < sc_.cordons.size(); ++i) {
      clock_.Add(sc_.cordons[i].at_s, SimEventKind::kCordon, i);
      if (sc_.cordons[i].until_s) clock_.Add(*sc_.cordons[i].until_s, SimEventKind::kUncordon, i);
    }
    const auto t0 = Clock::now();
    const int64_t requests_before = api_->request_count();
    VGPU_RETURN_IF_ERROR(MainLoop());
    VGPU_RETURN_IF_ERROR(Settle());
    result_.wall_s = MillisSince(t0) / 1000.0;
    result_.api_requests = api_->request_count() - requests_before;
    result_.virtual_s = clock_.now();
    VGPU_RETURN_IF_ERROR(Finish());
    Stop();
    return std::move(result_);
  }

  ~Run() { Stop(); }

 private:
  Status StartCluster() {
    auto cluster = LiveCluster::Start(sc_, policy_, o_);
    if (!cluster.ok()) return cluster.status();
    cluster_ = std::move(*cluster);
    api_ = &cluster_->api();
    http_ = &cluster_->extender();
    hub_ = &cluster_->kubelets();
    node_names_ = cluster_->node_names();
    auto client = cluster_->NewExtenderClient();
    if (!client.ok()) return client.status();
    binder_ = std::make_unique<Binder>(std::move(*client), o_.max_bind_attempts);
    if (sc_.quotas.empty()) {
      // Without quotas the webhook's answer depends on the pod alone: admit ahead of the loop.
      auto admitter = cluster_->NewExtenderClient();
      if (!admitter.ok()) return admitter.status();
      std::vector<size_t> order(sc_.pods.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::stable_sort(order.begin(), order.end(), [this](size_t a, size_t b) {
        return sc_.pods[a].arrival_s < sc_.pods[b].arrival_s;  // the clock's order (ties: added)
      });
      admission_ = std::make_unique<AdmissionAhead>(
          std::move(*admitter), std::move(order),
          [this](size_t i) { return PodObject(sc_.pods[i], policy_); }, kAdmissionLookahead);
    }
    return Status::Ok();
  }

  Status MainLoop() {
    while (!clock_.empty() || queue_.active() > 0 || binder_->in_flight() > 0) {
      VGPU_RETURN_IF_ERROR(DrainBinds(false));
      if (queue_.active() > 0) {
        VGPU_RETURN_IF_ERROR(Attempt(*queue_.Pop()));
      } else if (!clock_.empty()) {
        VGPU_RETURN_IF_ERROR(HandleEvents(clock_.PopNextBatch()));
      } else {
        VGPU_RETURN_IF_ERROR(DrainBinds(true));
      }
    }
    return Status::Ok();
  }

  Status HandleEvents(const std::vector<SimEvent>& batch) {
    bool freed = false;
    // Cordons first: a GPU cordoned at the moment a pod arrives is cordoned for that pod.
    for (const SimEvent& e : batch) {
      if (e.kind == SimEventKind::kCordon || e.kind == SimEventKind::kUncordon) {
        VGPU_RETURN_IF_ERROR(SetCordon(e.pod, e.kind == SimEventKind::kCordon));
        freed = freed || e.kind == SimEventKind::kUncordon;
      }
    }
    for (const SimEvent& e : batch) {
      if (e.kind == SimEventKind::kArrival) {
        VGPU_RETURN_IF_ERROR(Arrive(e.pod));
      } else if (e.kind == SimEventKind::kDeparture) {
        VGPU_RETURN_IF_ERROR(Depart(e.pod));
        freed = true;
      }
    }
    if (freed) queue_.MoveAllToActive();
    return Status::Ok();
  }

  Status Arrive(size_t idx) {
    const PodSpec& spec = sc_.pods[idx];
    PodRun& run = pods_[idx];
    std::optional<Admitted> ahead;
    if (admission_) ahead = admission_->Take(idx);
    if (!ahead) ahead.emplace(AdmitTimed(*http_, PodObject(spec, policy_)));
    result_.admit_ms.Add(ahead->ms);
    Result<AdmissionResult>& admitted = ahead->result;
    if (!admitted.ok()) return admitted.status().WithContext("webhook for " + spec.name);
    if (!admitted->allowed) {
      run.phase = PodPhase::kDenied;
      ++result_.pods_denied;
      result_.rejections.push_back(PodRejection{spec.ns, spec.name, admitted->message, true});
      Progress();
      return Status::Ok();
    }
    auto created = api_->Seed("pods", admitted->pod);
    if (!created.ok()) return created.status().WithContext("creating pod " + spec.name);
    run.object = std::move(*created);
    run.uid = run.object["metadata"].value("uid", "");
    // Pods that are not ours (no GPU asked, another scheduler) are not this scheduler's job.
    if (run.object["spec"].value("schedulerName", "") != o_.scheduler_name) {
      run.phase = PodPhase::kDenied;
      ++result_.pods_denied;
      result_.rejections.push_back(PodRejection{
          spec.ns, spec.name, "not for " + o_.scheduler_name + " after admission", true});
      Progress();
      return Status::Ok();
    }
    run.phase = PodPhase::kQueued;
    queue_.Add(idx);
    return Status::Ok();
  }

  // The entry's node gets hami.io/device-cordon = the union of its entries in force (none: the
  // annotation removed). Binds in flight finish first, so each is checked against the cordon it
  // was decided under; then the run waits until the extender's filter reports the change, as a
  // deployed scheduler's node watch delivers it within moments.
  Status SetCordon(size_t idx, bool on) {
    VGPU_RETURN_IF_ERROR(DrainBinds(true));
    cordon_active_[idx] = on;
    const std::string& node = sc_.cordons[idx].node;
    std::set<std::string> uuids;
    for (size_t i = 0; i < sc_.cordons.size(); ++i) {
      if (!cordon_active_[i] || sc_.cordons[i].node != node) continue;
      uuids.insert(sc_.cordons[i].gpus.begin(), sc_.cordons[i].gpus.end());
    }
    std::string value;
    for (const std::string& u : uuids) value += (value.empty() ? "" : ",") + u;
    const json annotation = uuids.empty() ? json(nullptr) : json(value);
    auto patched = api_->store().Patch(
        *FindResource("v1", "nodes"), "", node, PatchType::kMerge,
        {{"metadata", {{"annotations", {{std::string(annotations::kDeviceCordon), annotation}}}}}});
    if (!patched.ok()) {
      return patched.status().WithContext("setting hami.io/device-cordon of node " + node);
    }
    for (const std::string& uuid : sc_.cordons[idx].gpus) {
      WaitForFilterToSeeCordon(node, uuid, uuids.contains(uuid));
    }
    return Status::Ok();
  }

  // Asks the filter about a 1-MiB pod pinned to `uuid` (not created) until its answer for the
  // node names CardCordoned exactly when `cordoned`; at most 5 s. A scheduler that never sees it
  // is then caught by invariant 5, not by this wait.
  void WaitForFilterToSeeCordon(const std::string& node, const std::string& uuid, bool cordoned) {
    PodSpec spec;
    spec.name = "vgpu-sim-cordon-probe";
    spec.gpus = 1;
    spec.mem_mib = 1;
    spec.annotations["nvidia.com/use-gpuuuid"] = uuid;
    json probe = PodObject(spec, policy_);
    probe["metadata"]["uid"] = "vgpu-sim-cordon-probe-" + std::to_string(++probes_);
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    while (Clock::now() < deadline) {
      auto f = http_->Filter(probe, {node});
      if (f.ok()) {
        auto it = f->failed.find(node);
        const bool seen =
            it != f->failed.end() && it->second.find("CardCordoned") != std::string::npos;
        if (seen == cordoned) return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    log::Warn("the extender's filter did not report GPU " + uuid + " of node " + node +
              (cordoned ? " cordoned" : " uncordoned") + " within 5 s; going on");
  }

  Status Depart(size_t idx) {
    PodRun& run = pods_[idx];
    if (run.phase != PodPhase::kBound) return Status::Ok();
    const PodSpec& spec = sc_.pods[idx];
    auto deleted = api_->store().Delete(*FindResource("v1", "pods"), spec.ns, spec.name);
    if (!deleted.ok()) return deleted.status().WithContext("deleting pod " + spec.name);
    run.phase = PodPhase::kCompleted;
    ++result_.pods_completed;
    result_.placements[run.placement].completed = true;
    return Status::Ok();
  }

  Status Attempt(size_t idx) {
    PodRun& run = pods_[idx];
    const PodSpec& spec = sc_.pods[idx];
    ++result_.scheduling_attempts;
    const auto t0 = Clock::now();
    const std::vector<std::string> window = NextNodeWindow();
    auto filtered = http_->Filter(run.object, window);
    if (filtered.ok() && filtered->feasible.empty() && filtered->error.empty() &&
        window.size() < node_names_.size()) {
      // kube-scheduler would try another window in a later cycle; asking about every node now
      // keeps "a pod that fits is placed" exact without waiting for cycles.
      filtered = http_->Filter(run.object, node_names_);
    }
    result_.filter_ms.Add(MillisSince(t0));
    if (!filtered.ok()) return filtered.status().WithContext("filter for " + spec.name);
    if (!filtered->error.empty()) {
      queue_.MarkUnschedulable(idx, "extender error: " + filtered->error);
      return Status::Ok();
    }
    if (filtered->feasible.empty()) {
      queue_.MarkUnschedulable(idx, SummariseFailures(*filtered, node_names_.size()));
      const int priority = sc_.pods[idx].priority.value_or(0);
      if (priority <= lowest_priority_) return Status::Ok();  // nobody to evict: no dry run
      const auto t2 = Clock::now();
      Status preempted = Preempt(idx, priority);
      result_.preempt_ms.Add(MillisSince(t2));
      return preempted;
    }
    const auto t1 = Clock::now();
    auto scores = http_->Prioritize(run.object, filtered->feasible);
    result_.prioritize_ms.Add(MillisSince(t1));
    if (!scores.ok()) return scores.status().WithContext("prioritize for " + spec.name);
    // The highest score wins; ties go to the first feasible node (kube-scheduler picks randomly).
    std::map<std::string, int64_t> score_of;
    for (const HostScore& s : *scores) score_of[s.host] = s.score;
    std::string best = filtered->feasible.front();
    for (const std::string& n : filtered->feasible) {
      if (score_of[n] > score_of[best]) best = n;
    }
    // Bind asynchronously, as kube-scheduler does: the next pod is filtered meanwhile. Without
    // async_bind, wait for it: every decision then sees the previous one (reproducible runs).
    run.phase = PodPhase::kBinding;
    binder_->Submit(BindJob{idx, spec.ns, spec.name, run.uid, best, t0});
    if (!o_.async_bind) return DrainBinds(true);
    return Status::Ok();
  }

  // kube-scheduler's PostFilter (defaultpreemption, 1.20) as far as the extender sees it. Its
  // dry run ignores vGPU resources, so every node holding a pod of lower priority is a candidate
  // with no victims of its own (at most max(100, 10% of the nodes), as its numCandidates, taken
  // from an offset that moves on at each attempt, as 1.20's random offset does: a cluster larger
  // than the cap still offers every node in turn); the
  // extender answers the victims per node; the node is picked as pickOneNodeForPreemption does
  // (lowest highest-priority victim, then lowest priority sum, then fewest victims; 1.20 drops
  // the PDB count an extender returns), its victims deleted, and the pod tried again first.
  Status Preempt(size_t idx, int priority) {
    std::map<std::string, std::vector<std::string>> candidates;
    const size_t cap = std::max<size_t>(100, node_names_.size() / 10);
    std::set<std::string> holding_lower;
    for (size_t i = 0; i < pods_.size(); ++i) {
      if (pods_[i].phase == PodPhase::kBound && sc_.pods[i].priority.value_or(0) < priority) {
        holding_lower.insert(result_.placements[pods_[i].placement].node);
      }
    }
    const size_t n = node_names_.size();
    for (size_t i = 0; i < n && candidates.size() < cap; ++i) {
      const std::string& node = node_names_[(preempt_offset_ + i) % n];
      if (holding_lower.count(node) != 0) candidates[node];
    }
    preempt_offset_ = n == 0 ? 0 : (preempt_offset_ + cap) % n;
    if (candidates.empty()) return Status::Ok();
    PodRun& run = pods_[idx];
    const PodSpec& spec = sc_.pods[idx];
    auto answer = http_->Preempt(run.object, candidates);
    if (!answer.ok()) return answer.status().WithContext("preempt for " + spec.name);
    std::map<std::string, size_t> by_uid;
    for (size_t i = 0; i < pods_.size(); ++i) {
      if (!pods_[i].uid.empty()) by_uid[pods_[i].uid] = i;
    }
    std::string best;
    std::tuple<int, int64_t, size_t> best_rank{0, 0, 0};
    for (const auto& [node, uids] : *answer) {
      int highest = std::numeric_limits<int>::min();
      int64_t sum = 0;
      for (const std::string& u : uids) {
        auto it = by_uid.find(u);
        const int p = it != by_uid.end() ? sc_.pods[it->second].priority.value_or(0) : 0;
        highest = std::max(highest, p);
        sum += p;
      }
      const std::tuple<int, int64_t, size_t> rank{highest, sum, uids.size()};
      if (!uids.empty() && (best.empty() || rank < best_rank)) {
        best = node;
        best_rank = rank;
      }
    }
    if (best.empty()) return Status::Ok();  // no node where evictions help: nobody goes
    for (const std::string& u : (*answer)[best]) {
      auto it = by_uid.find(u);
      if (it == by_uid.end() || pods_[it->second].phase != PodPhase::kBound) {
        violations_.push_back("preemption for " + spec.name +
                              " named a victim that is not a running pod: " + u);
        continue;
      }
      const size_t v = it->second;
      const PodSpec& victim = sc_.pods[v];
      if (victim.priority.value_or(0) >= priority) {
        violations_.push_back("preemption for " + spec.name + " (priority " +
                              std::to_string(priority) + ") evicted " + victim.name +
                              " of priority " + std::to_string(victim.priority.value_or(0)));
      }
      auto deleted = api_->store().Delete(*FindResource("v1", "pods"), victim.ns, victim.name);
      if (!deleted.ok()) return deleted.status().WithContext("evicting " + victim.name);
      pods_[v].phase = PodPhase::kPreempted;
      result_.placements[pods_[v].placement].preempted = true;
      ++result_.pods_preempted;
    }
    ++result_.preemptions;
    // As kube-scheduler does: the pod's status names the node (the extender holds the room there
    // against pods of lower priority until it binds).
    auto nominated =
        api_->store().Patch(*FindResource("v1", "pods"), spec.ns, spec.name, PatchType::kMerge,
                            {{"status", {{"nominatedNodeName", best}}}});
    if (!nominated.ok()) return nominated.status().WithContext("nominating " + spec.name);
    run.object["status"]["nominatedNodeName"] = best;
    // kube-scheduler retries the nominated pod once its victims are gone; here, once the
    // extender's watch has seen them go (bounded: a node that never frees is left to Settle).
    const auto deadline = Clock::now() + std::chrono::seconds(2);
    while (Clock::now() < deadline) {
      auto f = http_->Filter(run.object, {best});
      if (f.ok() && !f->feasible.empty()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    queue_.MoveAllToActive();
    queue_.MoveToFront(idx);
    return Status::Ok();
  }

  // Applies finished binds; `wait` blocks until none is in flight.
  Status DrainBinds(bool wait) {
    for (BindDone& d : binder_->Take(wait)) {
      const PodSpec& spec = sc_.pods[d.job.idx];
      PodRun& run = pods_[d.job.idx];
      for (double ms : d.bind_ms) result_.bind_ms.Add(ms);
      if (!d.status.ok()) {
        ++result_.binds_refused;
        run.phase = PodPhase::kQueued;
        queue_.MarkUnschedulable(d.job.idx,
                                 "bind to " + d.job.node + " failed: " + d.status.message());
        continue;
      }
      result_.schedule_ms.Add(d.schedule_ms);
      run.phase = PodPhase::kBound;
      ++result_.pods_placed;
      auto stored = api_->Get("pods", spec.ns, spec.name);
      PodPlacement placement{spec.ns, spec.name, d.job.node, {}, clock_.now(), false, false};
      if (stored.ok()) placement.devices = DevicesOf(*stored);
      run.placement = static_cast<int>(result_.placements.size());
      result_.placements.push_back(std::move(placement));
      if (spec.duration_s) {
        clock_.Add(clock_.now() + *spec.duration_s, SimEventKind::kDeparture, d.job.idx);
      }
      if (!quotas_.empty()) CheckQuotasNow();
      CheckPlacementNow(d.job.idx);
      Progress();
    }
    return Status::Ok();
  }

  // Invariant 4 after each bind: the end state alone would miss a quota passed by pods that
  // left before the end. Each sentence is kept once, with the virtual time it was first seen.
  void CheckQuotasNow() {
    ++placements_checked_;
    std::vector<PodState> live;
    for (size_t i = 0; i < pods_.size(); ++i) {
      if (pods_[i].phase != PodPhase::kBound) continue;
      const PodPlacement& pl = result_.placements[pods_[i].placement];
      live.push_back(PodState{pl.ns, pl.name, pl.node, {}, {}, pl.devices});
    }
    for (const std::string& v : CheckQuotas(live, quotas_)) {
      // "namespace a: GPU memory quota exceeded": once per namespace and resource, not again
      // for every later bind while it stays over.
      if (quota_violations_seen_.insert(v.substr(0, v.find(','))).second) {
        violations_.push_back(v + AtVirtualTime());
      }
    }
  }

  // Where a violation found during the run happened, for its sentence.
  std::string AtVirtualTime() const {
    return " (at virtual " + FormatFixed(clock_.now(), 3) + " s)";
  }

  // Invariant 5 at each bind: against the node's hami.io/device-cordon as stored now (binds are
  // drained before a cordon changes), and for a mutex pod against the pods placed before it.
  // Nothing is read where the scenario has no cordons and the pod does not ask for mutex.
  void CheckPlacementNow(size_t idx) {
    const PodPlacement& pl = result_.placements[pods_[idx].placement];
    PodState pod{pl.ns, pl.name, pl.node, {}, {}, pl.devices};
    const json::json_pointer policy_ptr("/metadata/annotations/hami.io~1gpu-scheduler-policy");
    if (pods_[idx].object.contains(policy_ptr) && pods_[idx].object.at(policy_ptr).is_string()) {
      pod.annotations[std::string(annotations::kGpuSchedulerPolicy)] =
          pods_[idx].object.at(policy_ptr).get<std::string>();
    }
    std::set<std::string> cordoned;
    if (!sc_.cordons.empty()) {
      ++cordon_checks_;
      auto node = api_->Get("nodes", "", pl.node);
      const json::json_pointer ptr("/metadata/annotations/hami.io~1device-cordon");
      if (node.ok() && node->contains(ptr) && node->at(ptr).is_string()) {
        cordoned = CordonedUuids(node->at(ptr).get<std::string>());
      }
    }
    std::vector<PodState> placed;
    if (AsksForIdleGpu(pod)) {
      ++mutex_checks_;
      for (size_t i = 0; i < pods_.size(); ++i) {
        if (i == idx || pods_[i].phase != PodPhase::kBound) continue;
        const PodPlacement& other = result_.placements[pods_[i].placement];
        placed.push_back(PodState{other.ns, other.name, other.node, {}, {}, other.devices});
      }
    }
    for (const std::string& v : CheckPlacement(pod, cordoned, placed)) {
      violations_.push_back(v + AtVirtualTime());
    }
  }

  // kube-scheduler stops looking after numFeasibleNodesToFind nodes (percentageOfNodesToScore,
  // adaptive: 50% - nodes/125, at least 5% and 100 nodes) and rotates where it starts, so an
  // extender sees that many node names per pod, not the whole cluster.
  std::vector<std::string> NextNodeWindow() {
    const size_t n = node_names_.size();
    if (n <= 100) return node_names_;
    const size_t percent = std::max<size_t>(5, n / 125 < 45 ? 50 - n / 125 : 5);
    const size_t count = std::min(n, std::max<size_t>(100, n * percent / 100));
    std::vector<std::string> window;
    window.reserve(count);
    for (size_t i = 0; i < count; ++i) window.push_back(node_names_[(next_start_ + i) % n]);
    next_start_ = (next_start_ + count) % n;
    return window;
  }

  // Capacity freed late (deletions the extender's watch saw only after a retry) gets a few
  // more rounds, as kube-scheduler periodically flushes its unschedulable queue.
  Status Settle() {
    for (int round = 0; round < 5 && queue_.unschedulable() > 0; ++round) {
      hub_->WaitIdle(std::chrono::seconds(10));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const int placed_before = result_.pods_placed;
      queue_.MoveAllToActive();
      VGPU_RETURN_IF_ERROR(MainLoop());
      if (result_.pods_placed == placed_before && round > 0) break;
    }
    return Status::Ok();
  }

  Status Finish() {
    if (!hub_->WaitIdle(std::chrono::seconds(30))) {
      log::Warn("simulated kubelets did not settle within 30 s");
    }
    result_.allocate_failures = hub_->allocate_failures();
    for (const auto& [idx, reason] : queue_.unschedulable_pods()) {
      const PodSpec& spec = sc_.pods[idx];
      result_.rejections.push_back(PodRejection{spec.ns, spec.name, reason, false});
    }
    result_.pods_pending = static_cast<int>(queue_.unschedulable());
    const ListResult nodes = api_->store().List(*FindResource("v1", "nodes"), "");
    const ListResult pods = api_->store().List(*FindResource("v1", "pods"), "");
    std::map<std::string, const json*> by_key;
    for (const json& p : pods.items) by_key[PodKey(p)] = &p;
    for (PodPlacement& pl : result_.placements) {
      auto it = by_key.find(pl.ns + "/" + pl.name);
      if (it == by_key.end()) continue;
      pl.running = it->second->value("status", json::object()).value("phase", "") == "Running";
      if (pl.devices.empty()) pl.devices = DevicesOf(*it->second);
    }
    const NodePairScores scores = PairScoresOfNodes(nodes.items);
    result_.topology.scored_nodes = static_cast<int>(scores.size());
    for (const PodPlacement& pl : result_.placements) {
      CountPlacement(scores, pl.node, pl.devices, result_.topology);
    }
    auto snapshot = SnapshotFromObjects(nodes.items, pods.items, o_.defaults);
    if (!snapshot.ok()) return snapshot.status().WithContext("reading the end state");
    snapshot->quotas = quotas_;
    result_.gpu_usage = ComputeGpuUsage(*snapshot);
    result_.invariants = CheckInvariants(*snapshot);
    // Those seen during the run (preemption victims, quotas between binds) come first; the end
    // state's check replaces the report, so they are added back here. A quota still over at the
    // end was reported when it was first passed.
    std::erase_if(result_.invariants.violations, [&](const std::string& v) {
      return quota_violations_seen_.contains(v.substr(0, v.find(',')));
    });
    result_.invariants.placements_checked = placements_checked_;
    result_.invariants.cordon_checks = cordon_checks_;
    result_.invariants.mutex_checks = mutex_checks_;
    result_.invariants.violations.insert(result_.invariants.violations.begin(), violations_.begin(),
                                         violations_.end());
    for (const std::string& f : hub_->failures()) {
      result_.invariants.violations.push_back("kubelet Allocate failed for " + f);
    }
    Progress();
    return Status::Ok();
  }

  void Progress() {
    if (!o_.progress) return;
    o_.progress(static_cast<size_t>(result_.pods_placed) + static_cast<size_t>(result_.pods_denied),
                sc_.pods.size());
  }

  void Stop() {
    admission_.reset();
    binder_.reset();
    if (cluster_) cluster_->Stop();
  }

  const Scenario& sc_;
  PolicyPair policy_;
  const RunOptions& o_;
  std::vector<PodRun> pods_;
  RunResult result_;
  EventClock clock_;
  SchedulingQueue queue_;
  std::unique_ptr<LiveCluster> cluster_;
  std::unique_ptr<Binder> binder_;
  std::unique_ptr<AdmissionAhead> admission_;  // null where quotas make admission stateful
  ApiServer* api_ = nullptr;
  ExtenderClient* http_ = nullptr;
  KubeletHub* hub_ = nullptr;
  std::vector<std::string> node_names_;
  size_t next_start_ = 0;
  size_t preempt_offset_ = 0;  // where the next preemption's candidates start in node_names_
  int lowest_priority_ = std::numeric_limits<int>::max();  // of the scenario's pods
  std::vector<QuotaState> quotas_;                         // the scenario's, per namespace
  std::vector<std::string> violations_;                    // seen during the run
  std::set<std::string> quota_violations_seen_;
  int placements_checked_ = 0;
  int cordon_checks_ = 0;
  int mutex_checks_ = 0;
  std::vector<bool> cordon_active_;  // per entry of the scenario's cordons
  int probes_ = 0;
};

}  // namespace

json PodObject(const PodSpec& pod, const PolicyPair& policy) {
  json limits = json::object();
  if (pod.gpus) limits["nvidia.com/gpu"] = Quantity(*pod.gpus);
  if (pod.mem_mib) limits["nvidia.com/gpumem"] = Quantity(*pod.mem_mib);
  if (pod.mem_percent) limits["nvidia.com/gpumem-percentage"] = Quantity(*pod.mem_percent);
  if (pod.cores) limits["nvidia.com/gpucores"] = Quantity(*pod.cores);
  json ann = json::object();
  for (const auto& [k, v] : pod.annotations) ann[k] = v;
  if (!ann.contains(std::string(annotations::kNodeSchedulerPolicy))) {
    ann[std::string(annotations::kNodeSchedulerPolicy)] = policy.node_policy;
  }
  if (!ann.contains(std::string(annotations::kGpuSchedulerPolicy))) {
    ann[std::string(annotations::kGpuSchedulerPolicy)] = policy.gpu_policy;
  }
  json spec = {
      {"containers",
       {{{"name", "main"}, {"image", "vgpu-sim/workload"}, {"resources", {{"limits", limits}}}}}}};
  if (pod.priority) spec["priority"] = *pod.priority;
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", pod.name},
            {"namespace", pod.ns},
            {"labels", {{"app.kubernetes.io/managed-by", "vgpu-sim"}}},
            {"annotations", ann}}},
          {"spec", std::move(spec)},
          {"status", {{"phase", "Pending"}}}};
}

Result<RunResult> RunScenario(const Scenario& scenario, const PolicyPair& policy,
                              const RunOptions& options) {
  VGPU_RETURN_IF_ERROR(ValidateScenario(scenario));
  Run run(scenario, policy, options);
  return run.Execute();
}

}  // namespace vgpu::sim
