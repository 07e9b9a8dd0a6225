#include "monitor/node_monitor.h"

#include <algorithm>
#include <condition_variable>
#include <ctime>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "core/codec/container_dir.h"
#include "core/codec/node_inventory.h"
#include "core/monitor/cleanup_rule.h"
#include "core/monitor/container_folder.h"
#include "core/monitor/device_use.h"
#include "core/monitor/host_pid_match.h"
#include "core/monitor/sharing.h"
#include "core/monitor/tick_plan.h"
#include "monitor/container_set.h"
#include "monitor/dir_tree.h"
#include "monitor/nvml_reader.h"
#include "monitor/problem_log.h"
#include "monitor/proc_table.h"

namespace vgpu::monitor {
namespace {

int64_t MonoNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// A region is swept whole (its 1024 slots) at least this often; in between, the slots seen occupied
// are followed, and the free slots above the lowest until this many in a row
// (core/monitor/tick_plan.h).
constexpr int kSweepEveryTicks = 30;
constexpr int kFreeRun = 8;
// Every slot's owner is looked for in the whole process table at least this often; in between, an
// owner found keeps the slot while its start time holds, and a slot found gone stays gone.
constexpr int kProcRefreshTicks = 30;

// A slot's owner as the host-PID cache knows it: the region file, the pid and the start time.
using OwnerKey = std::tuple<FileId, int32_t, uint64_t>;

// One region file as read in this tick.
struct RegionTick {
  const std::string* dir_name = nullptr;
  const WatchedContainer* container = nullptr;
  RegionFile* file = nullptr;
  std::vector<RegionDevice> devices;
  std::vector<std::pair<int, RegionSlot>> slots;  // (slot index, figures) of the occupied slots
  std::vector<SlotMatch> matches;                 // parallel to `slots`
  std::vector<int32_t> host_pids;                 // of the matched slots
  bool in_use = false;                            // some slot matched or unverified
};

// One container's use of one GPU, in this tick.
struct UseTick {
  RegionTick* region = nullptr;
  uint32_t device = 0;
  DeviceUse use;
};

// One container's view of one GPU, with where it belongs.
struct PlacedView {
  std::string dir_name;
  std::string uuid;
  uint64_t gpu_memory = 0;  // the region's mem_physical: the GPU's size when NVML does not list it
  ContainerGpuView view;
};

PlacedView MakeView(const UseTick& u, Sharing sharing, const std::optional<PodIdentity>& pod,
                    const NvmlGpu* nvml, int64_t now_mono) {
  const RegionDevice& dev = u.region->devices[u.device];
  const ContainerDirName& name = u.region->container->name;
  PlacedView p{*u.region->dir_name, dev.uuid, dev.mem_physical, {}};
  ContainerGpuView& v = p.view;
  if (pod) {
    v.namespace_name = pod->namespace_name;
    v.pod = pod->name;
  }
  v.pod_uid = name.pod_uid;
  v.container = name.container;
  v.vdevice_index = static_cast<int>(u.device);
  v.memory_used_bytes = u.use.memory_used;
  v.no_memory = (dev.flags & VGPU_DEVICE_FLAG_NO_MEMORY) != 0;
  v.memory_limit_bytes = v.no_memory ? 0 : dev.mem_limit;
  v.memory_buffer_bytes = u.use.memory_buffer;
  v.memory_context_bytes = u.use.memory_context;
  v.sm_limit_percent = static_cast<int>(dev.sm_limit);
  v.sharing = sharing;
  v.policy = CorePolicyFromRegion(dev.sm_policy);
  v.last_kernel_seconds_ago = u.use.last_kernel_seconds_ago;
  v.processes = u.use.processes;
  // Utilization: NVML's per-process samples, else the limiter's busy time since the last tick.
  RegionFile::BusySample& prev = u.region->file->busy_samples()[u.device];
  std::optional<uint64_t> busy_delta;
  int64_t wall_delta = 0;
  if (prev.at_mono_ns != 0 && dev.sm_busy_ns >= prev.busy_ns) {
    busy_delta = dev.sm_busy_ns - prev.busy_ns;
    wall_delta = now_mono - prev.at_mono_ns;
  }
  prev = RegionFile::BusySample{dev.sm_busy_ns, now_mono};
  static const std::map<int32_t, double> kNoSamples;
  v.utilization_percent =
      ContainerUtilization(u.region->host_pids, nvml != nullptr ? nvml->sm_util_by_pid : kNoSamples,
                           busy_delta, wall_delta);
  return p;
}

// The GPUs NVML lists, plus those only regions name (index -1, the regions' figures), each with
// its containers; GPUs by index, containers by namespace, pod and container.
NodeSnapshot Assemble(const std::vector<NvmlGpu>& nvml_gpus, std::vector<PlacedView> views) {
  std::map<std::string, GpuView> gpus;
  for (const NvmlGpu& g : nvml_gpus) {
    GpuView v;
    v.index = g.index;
    v.uuid = g.uuid;
    v.type = codec::NvidiaDeviceType(g.name);
    v.memory_total_bytes = g.memory_total;
    v.memory_used_bytes = g.memory_used;
    v.utilization_percent = g.utilization;
    v.memory_utilization_percent = g.memory_utilization;
    gpus.emplace(g.uuid, std::move(v));
  }
  // A GPU NVML does not list is known from the regions only, which the containers write: its size
  // is the one recorded by the most containers (on a tie the largest: a tenant's tiny figure would
  // put every unlimited container over its "limit"), its use their sum (saturating), so that one
  // container's figures set the GPU's only if it outnumbers the other containers on it.
  std::map<std::string, std::map<uint64_t, std::set<std::string>>> region_totals;
  for (PlacedView& p : views) {
    auto [it, fresh] = gpus.try_emplace(p.uuid);
    if (fresh) {
      it->second.index = -1;
      it->second.uuid = p.uuid;
      region_totals[p.uuid];
    }
    if (auto totals = region_totals.find(p.uuid); totals != region_totals.end()) {
      totals->second[p.gpu_memory].insert(p.dir_name);
      uint64_t& used = it->second.memory_used_bytes;
      uint64_t sum = 0;
      used = __builtin_add_overflow(used, p.view.memory_used_bytes, &sum) ? UINT64_MAX : sum;
    }
    it->second.containers.push_back(std::move(p.view));
  }
  for (const auto& [uuid, totals] : region_totals) {
    size_t most = 0;
    for (const auto& [total, containers] : totals) {  // ascending: a later tie is larger
      if (containers.size() >= most) {
        most = containers.size();
        gpus[uuid].memory_total_bytes = total;
      }
    }
  }
  NodeSnapshot snap;
  for (auto& [uuid, gpu] : gpus) {
    std::sort(gpu.containers.begin(), gpu.containers.end(),
              [](const ContainerGpuView& a, const ContainerGpuView& b) {
                return std::tie(a.namespace_name, a.pod, a.container, a.pod_uid, a.vdevice_index) <
                       std::tie(b.namespace_name, b.pod, b.container, b.pod_uid, b.vdevice_index);
              });
    snap.gpus.push_back(std::move(gpu));
  }
  std::sort(snap.gpus.begin(), snap.gpus.end(), [](const GpuView& a, const GpuView& b) {
    return std::tuple(a.index < 0, a.index, a.uuid) < std::tuple(b.index < 0, b.index, b.uuid);
  });
  return snap;
}

class Engine final : public NodeMonitor {
 public:
  Engine(NodeMonitorOptions options, const PodDirectory* pods,
         std::unique_ptr<HostProcessSource> procs, std::unique_ptr<NvmlReader> nvml)
      : options_(std::move(options)),
        pods_(pods),
        procs_(std::move(procs)),
        nvml_(std::move(nvml)),
        log_(options_.log),
        containers_(options_.vgpu_dir + "/" + std::string(codec::kContainersFolder), &log_) {}
  ~Engine() override { Stop(); }
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  NodeSnapshot Snapshot() const override {
    std::lock_guard lock(snapshot_mu_);
    return snapshot_;
  }

  void TickNow() override { Tick(); }

  void Stop() override {
    {
      std::lock_guard lock(stop_mu_);
      stop_ = true;
    }
    stop_cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  void StartThread() {
    thread_ = std::thread([this] {
      std::unique_lock lock(stop_mu_);
      while (!stop_cv_.wait_for(lock, options_.tick, [this] { return stop_; })) {
        lock.unlock();
        Tick();
        lock.lock();
      }
    });
  }

  void Tick();

 private:
  std::vector<NvmlGpu> ReadNvml();
  // Reads each region's device records and occupied slots (tick_plan.h: which slots).
  std::vector<RegionTick> ReadRegions();
  // Matches slots to host processes and writes the host PIDs; false when some slot could not be
  // verified (then NVML's processes cannot be told apart from the containers').
  bool MatchAndWriteHostPids(std::vector<RegionTick>& regions);
  // Removes the folders of pods that are gone; the folders removed or being removed.
  std::set<std::string> CleanUp(const std::vector<RegionTick>& regions);
  // Each watched container's state (core/monitor/container_folder.h).
  std::vector<ContainerStatusView> ContainerStates(const std::set<std::string>& removed);

  const NodeMonitorOptions options_;
  const PodDirectory* const pods_;
  const std::unique_ptr<HostProcessSource> procs_;
  const std::unique_ptr<NvmlReader> nvml_;

  std::mutex tick_mu_;  // one tick at a time; guards everything below up to snapshot_mu_
  ProblemLog log_;
  ContainerSet containers_;
  std::map<OwnerKey, SlotMatch> owners_;  // the slots' owners found by earlier ticks
  int ticks_to_proc_refresh_ = 0;
  int sweeps_started_ = 0;  // spreads the regions' periodic sweeps over the ticks
  // Container folders being removed (over several ticks), with their pods' UIDs.
  std::map<std::string, std::string> removing_;
  TickDurations tick_durations_;

  mutable std::mutex snapshot_mu_;
  NodeSnapshot snapshot_;

  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  std::thread thread_;
};

std::vector<NvmlGpu> Engine::ReadNvml() {
  if (nvml_ == nullptr) return {};
  auto reading = nvml_->Read();
  if (!reading.ok()) {
    log_.Report("nvml", "NVML: " + reading.status().message());
    return {};
  }
  std::string problems;
  for (const std::string& p : reading->problems) problems += (problems.empty() ? "" : "; ") + p;
  if (problems.empty()) {
    log_.Resolve("nvml");
  } else {
    log_.Report("nvml", "NVML: " + problems);
  }
  return std::move(reading->gpus);
}

std::vector<RegionTick> Engine::ReadRegions() {
  std::vector<RegionTick> regions;
  for (auto& [dir_name, container] : containers_.containers()) {
    for (auto& [file_name, file] : container.regions) {
      RegionTick r;
      r.dir_name = &dir_name;
      r.container = &container;
      RegionFile* const rf = file.get();  // lambdas below cannot capture the binding
      r.file = rf;
      const uint32_t count = rf->DeviceCount();
      std::vector<uint64_t> totals;
      for (uint32_t d = 0; d < count; ++d) {
        r.devices.push_back(rf->Device(d));
        totals.push_back(r.devices.back().mem_used);
      }
      // Checked at the refresh, but the container may have written the records since: what this
      // tick passes on (UUIDs into labels and JSON) is checked on the copies it uses. A region
      // that fails is left out of this tick; the next refresh drops and reports it.
      if (!ValidateDevices(r.devices).ok()) continue;
      RegionFile::SlotMemo& memo = rf->slot_memo();
      const auto identity = [rf](int i) { return rf->Identity(i); };
      const auto sweep = [&] {
        std::vector<SeenSlot> seen;
        for (int i : rf->OccupiedSlots()) {
          const SlotIdentity id = rf->Identity(i);
          if (id.pid != 0) seen.push_back(SeenSlot{i, id});
        }
        // The first period of a region is shorter by an offset: regions found together do not
        // all sweep on the same tick.
        memo.ticks_to_sweep =
            memo.swept ? kSweepEveryTicks - 1 : sweeps_started_++ % kSweepEveryTicks;
        memo.swept = true;
        return seen;
      };
      std::optional<std::vector<SeenSlot>> seen;
      bool swept = false;
      if (memo.swept && memo.ticks_to_sweep > 0) {
        --memo.ticks_to_sweep;
        seen = FollowKnownSlots(memo.occupied, VGPU_REGION_MAX_PROCS, kFreeRun, identity);
      }
      if (!seen) {
        seen = sweep();
        swept = true;
      }
      const auto read_figures = [&] {
        r.slots.clear();
        std::vector<std::vector<uint64_t>> memory;
        for (const SeenSlot& k : *seen) {
          RegionSlot slot = rf->Slot(k.index);
          if (slot.pid == 0) continue;  // being claimed: counted once it is active
          std::vector<uint64_t>& m = memory.emplace_back(count);
          for (uint32_t d = 0; d < count; ++d) m[d] = slot.mem_used[d] + slot.mem_overhead[d];
          r.slots.emplace_back(k.index, slot);
        }
        return SlotsExplainTotals(totals, memory);
      };
      // Memory the slots followed do not explain is held by a slot they missed: sweep.
      if (!read_figures() && !swept) {
        seen = sweep();
        (void)read_figures();
      }
      memo.occupied = std::move(*seen);
      regions.push_back(std::move(r));
    }
  }
  return regions;
}

bool Engine::MatchAndWriteHostPids(std::vector<RegionTick>& regions) {
  const bool refresh_due = ticks_to_proc_refresh_ <= 0;
  ticks_to_proc_refresh_ = refresh_due ? kProcRefreshTicks - 1 : ticks_to_proc_refresh_ - 1;
  // What earlier ticks found: gone stays gone, a matched owner is checked by its start time; the
  // rest is looked for in the process table, all in one scan.
  ProcScanRequest request;
  std::vector<std::vector<bool>> pending(regions.size());
  for (size_t ri = 0; ri < regions.size(); ++ri) {
    RegionTick& r = regions[ri];
    r.matches.assign(r.slots.size(), SlotMatch{});
    pending[ri].assign(r.slots.size(), false);
    for (size_t k = 0; k < r.slots.size(); ++k) {
      const RegionSlot& slot = r.slots[k].second;
      auto cached = owners_.find(OwnerKey{r.file->id(), slot.pid, slot.start_time});
      const SlotMatch* known = cached != owners_.end() ? &cached->second : nullptr;
      std::optional<SlotMatch> match;
      switch (PlanOwnerLookup(known, refresh_due)) {
        case OwnerStep::kGone:
          match = *known;
          break;
        case OwnerStep::kRecheck: {
          Result<std::optional<HostStat>> st = procs_->Stat(known->host_pid);
          match = RecheckOwner(*known, slot.start_time, st.ok() ? *st : std::nullopt, st.ok());
          break;
        }
        case OwnerStep::kScan:
          break;
      }
      if (match) {
        r.matches[k] = *match;
      } else {
        pending[ri][k] = true;
        request.ns_pids.insert(slot.pid);
        request.regions.insert(r.file->id());
      }
    }
  }
  Result<std::vector<HostProcess>> procs = std::vector<HostProcess>{};
  if (!request.ns_pids.empty()) {
    procs = procs_->Scan(request);
    if (procs.ok()) {
      log_.Resolve("proc");
    } else {
      log_.Report("proc", "host processes: " + procs.status().message() +
                              "; every occupied slot counts as live and no host PID is written");
    }
  }
  static const std::vector<HostProcess> kNone;
  std::map<OwnerKey, SlotMatch> owners;
  bool all_verified = true;
  for (size_t ri = 0; ri < regions.size(); ++ri) {
    RegionTick& r = regions[ri];
    std::vector<SlotIdentity> ids;
    std::vector<size_t> where;
    for (size_t k = 0; k < r.slots.size(); ++k) {
      if (!pending[ri][k]) continue;
      ids.push_back({r.slots[k].second.pid, r.slots[k].second.start_time});
      where.push_back(k);
    }
    if (!ids.empty()) {
      const std::vector<SlotMatch> found =
          MatchSlots(ids, r.file->id(), procs.ok() ? *procs : kNone, procs.ok());
      for (size_t j = 0; j < found.size(); ++j) r.matches[where[j]] = found[j];
    }
    for (size_t k = 0; k < r.slots.size(); ++k) {
      auto& [index, slot] = r.slots[k];
      const SlotMatch& m = r.matches[k];
      if (m.state == SlotState::kUnverified) {
        all_verified = false;
        r.in_use = true;
        slot.host_pid = 0;  // whatever the slot holds is not confirmed by this tick
        continue;           // not remembered: looked for again next tick
      }
      owners.emplace(OwnerKey{r.file->id(), slot.pid, slot.start_time}, m);
      if (m.state == SlotState::kMatched) {
        r.in_use = true;
        r.host_pids.push_back(m.host_pid);
        if (slot.host_pid != m.host_pid || slot.host_start_time != slot.start_time) {
          r.file->WriteHostPid(index, m.host_pid, slot.start_time);
        }
        slot.host_pid = m.host_pid;
      }
    }
  }
  owners_ = std::move(owners);  // slots no longer occupied are forgotten
  return all_verified;
}

std::set<std::string> Engine::CleanUp(const std::vector<RegionTick>& regions) {
  const int fd = containers_.containers_fd();
  std::set<std::string> removed;  // removed, or on their way out: not in the snapshot
  for (const auto& [dir_name, uid] : removing_) removed.insert(dir_name);
  if (fd < 0 || !pods_->Synced()) return removed;
  std::set<std::string> in_use;
  for (const RegionTick& r : regions) {
    if (r.in_use) in_use.insert(*r.dir_name);
  }
  const auto now = std::chrono::system_clock::now();
  for (const auto& [dir_name, container] : containers_.containers()) {
    if (removing_.contains(dir_name)) continue;
    CleanupFacts facts;
    facts.pods_synced = true;
    facts.pod_exists = pods_->Find(container.name.pod_uid).has_value();
    facts.in_use = in_use.contains(dir_name);
    if (facts.pod_exists || facts.in_use) continue;
    // Bounded: the folder is the container's, and may hold millions of entries.
    auto newest = NewestChange(fd, dir_name, kMaxTreeEntriesVisited, kMaxTreeDepth);
    if (!newest.ok()) {
      log_.Report("clean:" + dir_name, "cannot clean up " + options_.vgpu_dir + "/containers/" +
                                           dir_name + ": " + newest.status().message());
      continue;
    }
    facts.newest_change = *newest;
    if (ShouldRemoveContainerDir(facts, now, options_.cleanup_grace)) {
      removing_.emplace(dir_name, container.name.pod_uid);
    }
  }
  // A removal goes on over ticks until done (removing changes the folder's times, so its grace is
  // not looked at again), at most max_removals_per_tick entries a tick over all of them.
  size_t budget = options_.max_removals_per_tick;
  for (auto it = removing_.begin(); it != removing_.end() && budget > 0;) {
    const std::string& dir_name = it->first;
    removed.insert(dir_name);
    containers_.Forget(dir_name);  // unmapped before it goes
    const std::string path = options_.vgpu_dir + "/containers/" + dir_name;
    Result<bool> done = RemoveTree(fd, dir_name, &budget);
    if (!done.ok()) {
      log_.Report("clean:" + dir_name, "cannot remove " + path + ": " + done.status().message());
      it = removing_.erase(it);  // looked at again from the start next tick
      continue;
    }
    if (!*done) {
      log_.Report("clean:" + dir_name,
                  "removing " + path + ": more entries than a tick removes; going on next tick");
      ++it;
      continue;
    }
    log_.Resolve("clean:" + dir_name);
    std::string line = "removed " + path;
    line += ": pod " + it->second;
    line += " is gone and nothing there changed for ";
    line += std::to_string(options_.cleanup_grace.count()) + " s";
    log_.Log(line);
    it = removing_.erase(it);
  }
  for (const auto& [dir_name, uid] : removing_) removed.insert(dir_name);
  return removed;
}

std::vector<ContainerStatusView> Engine::ContainerStates(const std::set<std::string>& removed) {
  std::vector<ContainerStatusView> out;
  for (const auto& [dir_name, c] : containers_.containers()) {
    if (removed.contains(dir_name)) continue;
    ContainerStatusView& v = out.emplace_back();
    if (const std::optional<PodIdentity> pod = pods_->Find(c.name.pod_uid)) {
      v.namespace_name = pod->namespace_name;
      v.pod = pod->name;
    }
    v.pod_uid = c.name.pod_uid;
    v.container = c.name.container;
    v.state = DecideContainerState(c.findings);
    v.regions = static_cast<int>(c.regions.size());
    v.problem = c.problem;
  }
  std::sort(out.begin(), out.end(), [](const ContainerStatusView& a, const ContainerStatusView& b) {
    return std::tie(a.namespace_name, a.pod, a.container, a.pod_uid) <
           std::tie(b.namespace_name, b.pod, b.container, b.pod_uid);
  });
  return out;
}

void Engine::Tick() {
  std::lock_guard tick_lock(tick_mu_);
  const auto now_wall = std::chrono::system_clock::now();
  const int64_t now_mono = MonoNs();

  const std::vector<NvmlGpu> nvml_gpus = ReadNvml();
  containers_.Refresh();
  std::vector<RegionTick> regions = ReadRegions();
  const bool all_verified = MatchAndWriteHostPids(regions);

  // Each container's use of each of its GPUs.
  std::vector<UseTick> uses;
  std::vector<GpuClaim> claims;
  std::set<int32_t> container_host_pids;
  for (RegionTick& r : regions) {
    container_host_pids.insert(r.host_pids.begin(), r.host_pids.end());
    for (uint32_t d = 0; d < r.devices.size(); ++d) {
      if (r.devices[d].uuid.empty()) continue;  // a record being registered
      std::vector<SlotUse> live;
      for (size_t k = 0; k < r.slots.size(); ++k) {
        if (r.matches[k].state == SlotState::kGone) continue;
        const RegionSlot& s = r.slots[k].second;
        live.push_back(
            SlotUse{s.pid, s.host_pid, s.mem_used[d], s.mem_overhead[d], s.last_kernel_ns[d]});
      }
      UseTick u{&r, d, SummarizeDeviceUse(live, now_mono, r.devices.size() == 1)};
      claims.push_back(GpuClaim{*r.dir_name, r.devices[d].uuid, u.use.on_gpu});
      uses.push_back(std::move(u));
    }
  }

  // Processes on a GPU that belong to no container make it shared. Only countable when every
  // slot was verified: an unverified slot's process is in NVML's list under a PID we cannot tie
  // to it.
  std::map<std::string, int> outside;
  if (all_verified) {
    for (const NvmlGpu& g : nvml_gpus) {
      if (!g.compute_pids) continue;
      for (int32_t pid : *g.compute_pids) {
        if (!container_host_pids.contains(pid)) ++outside[g.uuid];
      }
    }
  }
  const std::vector<Sharing> sharing = DecideSharing(claims, outside);
  for (size_t i = 0; i < uses.size(); ++i) {
    const int32_t flag = SharingToRegion(sharing[i]);
    const RegionDevice& dev = uses[i].region->devices[uses[i].device];
    if (dev.sm_sharing != flag) uses[i].region->file->WriteSharing(uses[i].device, flag);
  }

  // The views, before cleanup may unmap regions.
  std::map<std::string, const NvmlGpu*> nvml_by_uuid;
  for (const NvmlGpu& g : nvml_gpus) nvml_by_uuid[g.uuid] = &g;
  std::map<std::string, std::optional<PodIdentity>> pods;
  std::vector<PlacedView> views;
  for (size_t i = 0; i < uses.size(); ++i) {
    const std::string& uid = uses[i].region->container->name.pod_uid;
    auto pod = pods.find(uid);
    if (pod == pods.end()) pod = pods.emplace(uid, pods_->Find(uid)).first;
    const std::string& uuid = uses[i].region->devices[uses[i].device].uuid;
    auto nvml = nvml_by_uuid.find(uuid);
    views.push_back(MakeView(uses[i], sharing[i], pod->second,
                             nvml != nvml_by_uuid.end() ? nvml->second : nullptr, now_mono));
  }

  const std::set<std::string> removed = CleanUp(regions);
  regions.clear();  // its pointers may dangle now
  std::erase_if(views, [&](const PlacedView& v) { return removed.contains(v.dir_name); });

  NodeSnapshot snap = Assemble(nvml_gpus, std::move(views));
  snap.containers = ContainerStates(removed);
  snap.node = options_.node_name;
  snap.time_unix_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now_wall.time_since_epoch()).count();
  tick_durations_.Observe(static_cast<double>(MonoNs() - now_mono) / 1e9);
  snap.tick_durations = tick_durations_;
  std::lock_guard lock(snapshot_mu_);
  snapshot_ = std::move(snap);
}

void LogToStderr(log::Level level, const std::string& line) {
  log::Write(level, line, {});
}

}  // namespace

Result<std::unique_ptr<NodeMonitor>> NodeMonitor::Start(NodeMonitorOptions options,
                                                        const PodDirectory* pods) {
  std::string proc_root = options.proc_root;
  return Start(std::move(options), pods, NewProcfsSource(std::move(proc_root)));
}

Result<std::unique_ptr<NodeMonitor>> NodeMonitor::Start(NodeMonitorOptions options,
                                                        const PodDirectory* pods,
                                                        std::unique_ptr<HostProcessSource> procs) {
  if (pods == nullptr) return InvalidArgument("the node monitor needs a pod directory");
  if (procs == nullptr) return InvalidArgument("the node monitor needs a source of host processes");
  if (options.tick <= std::chrono::milliseconds(0)) {
    return InvalidArgument("the monitor's tick must be positive");
  }
  if (!options.log) options.log = LogToStderr;
  std::unique_ptr<NvmlReader> nvml;
  if (!options.nvml_library.empty()) {
    auto opened = NvmlReader::Open(options.nvml_library);
    if (!opened.ok()) return opened.status();
    nvml = std::move(*opened);
  }
  auto engine =
      std::make_unique<Engine>(std::move(options), pods, std::move(procs), std::move(nvml));
  engine->Tick();
  engine->StartThread();
  return std::unique_ptr<NodeMonitor>(std::move(engine));
}

}  // namespace vgpu::monitor
