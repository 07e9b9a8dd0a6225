// The node monitor's engine end to end: real processes (tests/libvgpu/support) run with libvgpu.so
// preloaded against the fake driver, in container directories laid out as the device plugin lays
// them out; the monitor reads their regions, the host's /proc and the fake NVML.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/monitor/proc_parse.h"
#include "monitor/node_monitor.h"
#include "monitor/proc_table.h"
#include "process_runner.h"
#include "vgpu/region_layout.h"

namespace vgpu::monitor {
namespace {

namespace fs = std::filesystem;
using testing::Child;
using Env = std::map<std::string, std::string>;
using std::chrono::milliseconds;

constexpr uint64_t kMiB = 1ULL << 20;
constexpr const char* kGpu0 = "GPU-00000000-0000-0000-0000-000000000000";

int64_t NowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

class FakePods : public PodDirectory {
 public:
  std::optional<PodIdentity> Find(const std::string& uid) const override {
    std::lock_guard lock(mu_);
    auto it = pods_.find(uid);
    if (it == pods_.end()) return std::nullopt;
    return it->second;
  }
  bool Synced() const override {
    std::lock_guard lock(mu_);
    return synced_;
  }
  void Add(const std::string& uid, const std::string& ns, const std::string& name) {
    std::lock_guard lock(mu_);
    pods_[uid] = PodIdentity{ns, name, uid};
  }
  void SetSynced(bool synced) {
    std::lock_guard lock(mu_);
    synced_ = synced;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, PodIdentity> pods_;
  bool synced_ = true;
};

// The real /proc, with every process presented as if it ran in a container's PID namespace whose
// host PIDs are the real ones + `offset` (what the fake NVML reports under
// VGPU_FAKE_HOST_PID_OFFSET).
class OffsetProcSource : public HostProcessSource {
 public:
  explicit OffsetProcSource(int offset) : real_(NewProcfsSource("/proc")), offset_(offset) {}
  Result<std::vector<HostProcess>> Scan(const ProcScanRequest& request) override {
    auto procs = real_->Scan(request);
    if (!procs.ok()) return procs;
    for (HostProcess& p : *procs) {
      p.host_pid += offset_;
      p.ns_pids.insert(p.ns_pids.begin(), p.host_pid);  // NSpid: host, then the container's
    }
    return procs;
  }
  Result<std::optional<HostStat>> Stat(int32_t host_pid) override {
    return real_->Stat(host_pid - offset_);
  }

 private:
  std::unique_ptr<HostProcessSource> real_;
  int offset_;
};

class MonitorEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/vgpu-monitor-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    containers_ = dir_ + "/vgpu/containers";
    fs::create_directories(containers_);
    fs::create_directories(dir_ + "/gpu");
    // The monitor's own NVML (the fake, in this process) reads the same simulated GPUs.
    setenv("VGPU_FAKE_STATE_DIR", (dir_ + "/gpu").c_str(), 1);
    unsetenv("VGPU_FAKE_HOST_PID_OFFSET");
  }
  void TearDown() override {
    if (monitor_ != nullptr) monitor_->Stop();
    monitor_.reset();
    unsetenv("VGPU_FAKE_HOST_PID_OFFSET");
    fs::remove_all(dir_);
  }

  NodeMonitorOptions Options(milliseconds tick = milliseconds(3'600'000)) {
    NodeMonitorOptions o;
    o.node_name = "node-1";
    o.vgpu_dir = dir_ + "/vgpu";
    o.tick = tick;
    o.nvml_library = std::string(VGPU_FAKE_DIR) + "/libnvidia-ml.so.1";
    o.log = [this](log::Level, const std::string& line) {
      std::lock_guard lock(log_mu_);
      log_.push_back(line);
    };
    return o;
  }
  void StartMonitor(NodeMonitorOptions o, std::unique_ptr<HostProcessSource> procs = nullptr) {
    auto m = procs != nullptr ? NodeMonitor::Start(std::move(o), &pods_, std::move(procs))
                              : NodeMonitor::Start(std::move(o), &pods_);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    monitor_ = std::move(*m);
  }
  std::vector<std::string> Log() {
    std::lock_guard lock(log_mu_);
    return log_;
  }
  int LogLinesWith(const std::string& a, const std::string& b = "") {
    int n = 0;
    for (const std::string& line : Log()) {
      n += line.find(a) != std::string::npos && line.find(b) != std::string::npos ? 1 : 0;
    }
    return n;
  }

  // A container directory as the device plugin makes it; returns the region path inside it.
  std::string ContainerDir(const std::string& name) const {
    fs::create_directories(containers_ + "/" + name);
    return containers_ + "/" + name + "/" + "r.cache";
  }
  // The environment of a process of the container whose region is `region`.
  Env ContainerEnv(const std::string& region, const std::string& limit) const {
    Env env{{"LD_PRELOAD", VGPU_LIBVGPU_SO},        {"LD_LIBRARY_PATH", VGPU_FAKE_DIR},
            {"VGPU_FAKE_STATE_DIR", dir_ + "/gpu"}, {"VGPU_FAKE_CONTEXT_MEMORY", "10m"},
            {"VGPU_FAKE_MODULE_MEMORY", "0"},       {"CUDA_DEVICE_MEMORY_SHARED_CACHE", region}};
    if (!limit.empty()) env["CUDA_DEVICE_MEMORY_LIMIT"] = limit;
    return env;
  }
  // A probe holding a context and 2 MiB until its stdin closes.
  static std::unique_ptr<Child> Hold(const Env& env) {
    auto c = std::make_unique<Child>(std::vector<std::string>{VGPU_PROBE, "hold"}, env, true);
    const std::string line = c->ReadLine();
    EXPECT_EQ(line, "holding") << c->ReadAllStderr();
    return c;
  }

  static const GpuView* FindGpu(const NodeSnapshot& s, const std::string& uuid) {
    for (const GpuView& g : s.gpus) {
      if (g.uuid == uuid) return &g;
    }
    return nullptr;
  }
  static const ContainerGpuView* FindContainer(const NodeSnapshot& s, const std::string& uid) {
    for (const GpuView& g : s.gpus) {
      for (const ContainerGpuView& c : g.containers) {
        if (c.pod_uid == uid) return &c;
      }
    }
    return nullptr;
  }
  Sharing SharingOf(const std::string& uid) const {
    const NodeSnapshot s = monitor_->Snapshot();
    const ContainerGpuView* c = FindContainer(s, uid);
    return c != nullptr ? c->sharing : Sharing::kUnknown;
  }
  // Polls the snapshot until `done` or the timeout; the time it took, or -1.
  template <typename F>
  double WaitFor(F done, double timeout_s) const {
    const int64_t start = NowNs();
    while (NowNs() - start < static_cast<int64_t>(timeout_s * 1e9)) {
      if (done()) return static_cast<double>(NowNs() - start) / 1e9;
      std::this_thread::sleep_for(milliseconds(20));
    }
    return -1;
  }

  // A region file laid out by hand (one device, kGpu0, no slots), changed by `mutate` first.
  static void WriteRegion(const std::string& path,
                          const std::function<void(vgpu_region&)>& mutate = {}) {
    auto r = std::make_unique<vgpu_region>();
    std::memset(r.get(), 0, sizeof(vgpu_region));
    r->header.magic = VGPU_REGION_MAGIC;
    r->header.version = VGPU_REGION_VERSION;
    r->header.header_size = sizeof(vgpu_region_header);
    r->header.file_size = sizeof(vgpu_region);
    r->header.max_devices = VGPU_REGION_MAX_DEVICES;
    r->header.max_procs = VGPU_REGION_MAX_PROCS;
    r->header.device_count = 1;
    (void)std::snprintf(r->devices[0].uuid, sizeof r->devices[0].uuid, "%s", kGpu0);
    r->devices[0].mem_physical = 16ULL << 30;
    if (mutate) mutate(*r);
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(r.get()), sizeof(vgpu_region));
  }
  static const ContainerStatusView* FindState(const NodeSnapshot& s, const std::string& uid) {
    for (const ContainerStatusView& c : s.containers) {
      if (c.pod_uid == uid) return &c;
    }
    return nullptr;
  }

  // The region's device record 0 and the slot of `pid`, read as another process would.
  static vgpu_region_device RegionDevice0(const std::string& path) {
    vgpu_region_device d{};
    std::ifstream f(path, std::ios::binary);
    f.seekg(static_cast<std::streamoff>(offsetof(vgpu_region, devices)));
    f.read(reinterpret_cast<char*>(&d), sizeof d);
    return d;
  }
  static std::optional<vgpu_region_proc> RegionSlotOf(const std::string& path, pid_t pid) {
    auto r = std::make_unique<vgpu_region>();
    std::ifstream(path, std::ios::binary).read(reinterpret_cast<char*>(r.get()), sizeof *r);
    for (const vgpu_region_proc& p : r->procs) {
      if (p.pid == pid) return p;
    }
    return std::nullopt;
  }

  std::string dir_;
  std::string containers_;
  FakePods pods_;
  std::unique_ptr<NodeMonitor> monitor_;
  std::mutex log_mu_;
  std::vector<std::string> log_;
};

// Two containers with live processes are listed with their memory, limits and processes; the
// liveness of a slot is its host process: one that exits or is killed no longer counts. Broken
// directories and files are logged once and skipped.
TEST_F(MonitorEngineTest, DiscoversContainersAndSkipsWhatIsNotARegion) {
  pods_.Add("uid-a", "team", "train");
  const std::string region_a = ContainerDir("uid-a_main");
  const std::string region_b = ContainerDir("uid-b_side");
  auto a1 = Hold(ContainerEnv(region_a, "100m"));
  auto a2 = Hold(ContainerEnv(region_a, "100m"));
  auto b1 = Hold(ContainerEnv(region_b, "200m"));
  // What is not a region: a truncated file, a foreign file, a link, a name that is not
  // <uid>_<container>.
  std::ofstream(ContainerDir("uid-c_trunc")) << std::string(100, 'x');
  const std::string foreign = ContainerDir("uid-d_foreign");
  std::ofstream(foreign, std::ios::binary) << std::string(sizeof(vgpu_region), '\xab');
  fs::create_symlink(region_a, ContainerDir("uid-e_link"));
  fs::create_directories(containers_ + "/nounderscore");

  StartMonitor(Options());
  NodeSnapshot s = monitor_->Snapshot();
  EXPECT_EQ(s.node, "node-1");
  ASSERT_EQ(s.gpus.size(), 1u);
  const GpuView& gpu = s.gpus[0];
  EXPECT_EQ(gpu.index, 0);
  EXPECT_EQ(gpu.uuid, kGpu0);
  EXPECT_EQ(gpu.type, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(gpu.memory_total_bytes, 16ULL << 30);
  EXPECT_EQ(gpu.memory_used_bytes,
            36 * kMiB);  // NVML: three processes, each a 10 MiB context + 2 MiB
  ASSERT_EQ(gpu.containers.size(), 2u);
  const ContainerGpuView* a = FindContainer(s, "uid-a");
  const ContainerGpuView* b = FindContainer(s, "uid-b");
  ASSERT_TRUE(a != nullptr && b != nullptr);
  EXPECT_EQ(a->namespace_name, "team");
  EXPECT_EQ(a->pod, "train");
  EXPECT_EQ(a->container, "main");
  EXPECT_EQ(a->memory_used_bytes, 24 * kMiB);
  EXPECT_EQ(a->memory_buffer_bytes, 4 * kMiB);
  EXPECT_EQ(a->memory_context_bytes, 20 * kMiB);
  EXPECT_EQ(a->memory_limit_bytes, 100 * kMiB);
  ASSERT_EQ(a->processes.size(), 2u);
  for (const ProcessView& p : a->processes) {
    EXPECT_TRUE(p.pid == a1->pid() || p.pid == a2->pid()) << p.pid;
    EXPECT_EQ(p.host_pid, p.pid);  // same PID namespace here
    EXPECT_EQ(p.memory_bytes, 12 * kMiB);
  }
  EXPECT_EQ(b->namespace_name, "");  // pod unknown to the directory: still listed
  EXPECT_EQ(b->pod, "");
  EXPECT_EQ(b->container, "side");
  EXPECT_EQ(b->memory_used_bytes, 12 * kMiB);
  EXPECT_EQ(b->memory_limit_bytes, 200 * kMiB);
  ASSERT_EQ(b->processes.size(), 1u);
  EXPECT_EQ(b->processes[0].pid, b1->pid());
  // Both use the GPU: both shared, and the regions say so.
  EXPECT_EQ(a->sharing, Sharing::kShared);
  EXPECT_EQ(b->sharing, Sharing::kShared);
  EXPECT_EQ(RegionDevice0(region_a).sm_sharing, VGPU_SM_SHARING_SHARED);
  EXPECT_EQ(RegionDevice0(region_b).sm_sharing, VGPU_SM_SHARING_SHARED);
  // The slots carry their host PIDs.
  auto slot = RegionSlotOf(region_b, b1->pid());
  ASSERT_TRUE(slot.has_value());
  EXPECT_EQ(slot->host_pid, b1->pid());
  EXPECT_EQ(slot->host_start_time, slot->start_time);

  EXPECT_EQ(LogLinesWith("uid-c_trunc/r.cache", "truncated: 100 bytes"), 1)
      << ::testing::PrintToString(Log());
  EXPECT_EQ(LogLinesWith("uid-d_foreign/r.cache", "not a vgpu region"), 1);
  EXPECT_EQ(LogLinesWith("uid-e_link/r.cache", "symbolic link"), 1);
  EXPECT_EQ(LogLinesWith("nounderscore", "no '_'"), 1);
  const size_t lines = Log().size();
  monitor_->TickNow();
  EXPECT_EQ(Log().size(), lines) << "problems are logged once";
  std::ifstream foreign_in(foreign, std::ios::binary);
  const std::string foreign_now((std::istreambuf_iterator<char>(foreign_in)), {});
  EXPECT_EQ(foreign_now, std::string(sizeof(vgpu_region), '\xab'))
      << "a foreign file is not written";

  // A process that exits frees its slot; one killed leaves it, but it no longer counts.
  a2->CloseStdin();
  EXPECT_EQ(a2->Wait(), 0);
  kill(b1->pid(), SIGKILL);
  b1->Wait();
  ASSERT_TRUE(RegionSlotOf(region_b, b1->pid()).has_value()) << "nobody reaped it yet";
  monitor_->TickNow();
  s = monitor_->Snapshot();
  a = FindContainer(s, "uid-a");
  b = FindContainer(s, "uid-b");
  ASSERT_TRUE(a != nullptr && b != nullptr);
  EXPECT_EQ(a->memory_used_bytes, 12 * kMiB);
  EXPECT_EQ(a->processes.size(), 1u);
  EXPECT_EQ(b->memory_used_bytes, 0u);
  EXPECT_TRUE(b->processes.empty());
  // B is no longer on the GPU: A is alone; B, idle, would share with A if it started.
  EXPECT_EQ(a->sharing, Sharing::kAlone);
  EXPECT_EQ(b->sharing, Sharing::kShared);
  EXPECT_EQ(RegionDevice0(region_a).sm_sharing, VGPU_SM_SHARING_ALONE);
}

// Without NVML the GPUs come from the regions: index -1, the card size the region recorded, the
// containers' memory.
TEST_F(MonitorEngineTest, WithoutNvmlTheRegionsNameTheGpus) {
  auto p = Hold(ContainerEnv(ContainerDir("uid-a_main"), "100m"));
  NodeMonitorOptions o = Options();
  o.nvml_library = "";
  StartMonitor(o);
  const NodeSnapshot s = monitor_->Snapshot();
  ASSERT_EQ(s.gpus.size(), 1U);
  EXPECT_EQ(s.gpus[0].index, -1);
  EXPECT_EQ(s.gpus[0].uuid, kGpu0);
  EXPECT_EQ(s.gpus[0].type, "");
  EXPECT_EQ(s.gpus[0].memory_total_bytes, 16ULL << 30);
  EXPECT_EQ(s.gpus[0].memory_used_bytes, 12 * kMiB);
  EXPECT_FALSE(s.gpus[0].utilization_percent.has_value());
  ASSERT_EQ(s.gpus[0].containers.size(), 1U);
  EXPECT_EQ(s.gpus[0].containers[0].sharing, Sharing::kAlone);
}

// Without NVML a GPU's size comes from the regions, which the tenants write: one tenant (even with
// four region files claiming the GPU, its folder sorted first) does not set it for the others.
// Before, the first region listed set it: 1 MiB for a 16 GiB GPU.
TEST_F(MonitorEngineTest, WithoutNvmlOneTenantDoesNotSetTheGpusSize) {
  auto p = Hold(ContainerEnv(ContainerDir("uid-a_main"), ""));
  const std::string evil = containers_ + "/uid-0evil_main";
  fs::create_directories(evil);
  for (int i = 0; i < 4; ++i) {
    WriteRegion(evil + "/r" + std::to_string(i) + ".cache",
                [](vgpu_region& r) { r.devices[0].mem_physical = kMiB; });
  }
  NodeMonitorOptions o = Options();
  o.nvml_library = "";
  StartMonitor(o);
  const NodeSnapshot s = monitor_->Snapshot();
  ASSERT_EQ(s.gpus.size(), 1U);
  EXPECT_EQ(s.gpus[0].memory_total_bytes, 16ULL << 30);
  EXPECT_EQ(s.gpus[0].memory_used_bytes, 12 * kMiB);
}

// Directories of pods that are gone are removed once the pod directory is synced and nothing in
// them changed for the grace period; everything else stays.
TEST_F(MonitorEngineTest, CleansUpDirectoriesOfPodsThatAreGone) {
  pods_.Add("uid-here", "ns", "here");
  pods_.SetSynced(false);
  const time_t old = time(nullptr) - 3600;
  auto make = [&](const std::string& name) {
    std::ofstream(ContainerDir(name)) << "not a region";
    fs::create_directories(containers_ + "/" + name + "/sub");
    std::ofstream(containers_ + "/" + name + "/sub/f") << "x";
  };
  make("uid-gone_main");
  make("uid-here_main");
  make("uid-fresh_main");
  // Links inside a doomed directory are removed, never followed.
  fs::create_directories(dir_ + "/outside");
  std::ofstream(dir_ + "/outside/keep.txt") << "keep";
  fs::create_directory_symlink(dir_ + "/outside", containers_ + "/uid-gone_main/escape");
  // A gone pod's directory still used by a live process stays.
  const std::string busy_region = ContainerDir("uid-busy_main");
  auto busy = Hold(ContainerEnv(busy_region, "100m"));
  auto age = [&](const std::string& name) {
    const timespec times[2] = {{old, 0}, {old, 0}};
    for (const auto& e : fs::recursive_directory_iterator(containers_ + "/" + name)) {
      ASSERT_EQ(utimensat(AT_FDCWD, e.path().c_str(), times, AT_SYMLINK_NOFOLLOW), 0);
    }
    ASSERT_EQ(utimensat(AT_FDCWD, (containers_ + "/" + name).c_str(), times, 0), 0);
  };
  age("uid-gone_main");
  age("uid-here_main");
  age("uid-busy_main");

  NodeMonitorOptions o = Options();
  o.cleanup_grace = std::chrono::seconds(300);
  StartMonitor(o);
  auto exists = [&](const std::string& name) { return fs::exists(containers_ + "/" + name); };
  // Not synced: a pod missing from the view is not known to be gone.
  EXPECT_TRUE(exists("uid-gone_main"));
  pods_.SetSynced(true);
  monitor_->TickNow();
  EXPECT_FALSE(exists("uid-gone_main"));
  EXPECT_TRUE(exists("uid-here_main"));   // pod exists
  EXPECT_TRUE(exists("uid-fresh_main"));  // within the grace period
  EXPECT_TRUE(exists("uid-busy_main"));   // a live process uses it
  EXPECT_TRUE(fs::exists(dir_ + "/outside/keep.txt"));
  EXPECT_EQ(LogLinesWith("removed", "uid-gone_main"), 1) << ::testing::PrintToString(Log());
  EXPECT_EQ(LogLinesWith("removed"), 1);
  // Once its process exits, the busy one goes too (its region changed when the process left, so
  // age it again).
  busy->CloseStdin();
  EXPECT_EQ(busy->Wait(), 0);
  age("uid-busy_main");
  monitor_->TickNow();
  EXPECT_FALSE(exists("uid-busy_main"));
  EXPECT_EQ(FindContainer(monitor_->Snapshot(), "uid-busy"), nullptr);
  EXPECT_TRUE(exists("uid-here_main"));
  EXPECT_TRUE(exists("uid-fresh_main"));
}

// Policy `default`: a tenant alone on the GPU runs unlimited once the monitor marks it alone; a
// second container arriving makes the monitor mark both shared within a few ticks, and both come
// under their limits.
TEST_F(MonitorEngineTest, SharingFeedbackLiftsAndRestoresTheLimit) {
  StartMonitor(Options(milliseconds(200)));
  auto tenant_env = [&](const std::string& region, int64_t start, int64_t end) {
    Env env = ContainerEnv(region, "");
    env["VGPU_FAKE_CONTEXT_MEMORY"] = "16m";
    env["CUDA_DEVICE_SM_LIMIT"] = "30";
    env["GPU_CORE_UTILIZATION_POLICY"] = "default";
    env["VGPU_SM_PEER_DIR"] = dir_ + "/vgpulock";
    env["VGPU_SM_ALONE_PAUSE_MS"] = "0";
    env["TENANT_KERNEL_US"] = "1500";
    env["TENANT_START_NS"] = std::to_string(start);
    env["TENANT_END_NS"] = std::to_string(end);
    return env;
  };
  auto share_of = [](Child& c) {
    const std::string out = c.ReadAllStdout();
    const std::string err = c.ReadAllStderr();
    const int status = c.Wait();
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out << err;
    const size_t work = out.find("work_ns=");
    const size_t window = out.find("window_ns=");
    if (work == std::string::npos || window == std::string::npos) {
      ADD_FAILURE() << "no result: " << out << err;
      return 0.0;
    }
    return 100.0 * std::stod(out.substr(work + 8)) / std::stod(out.substr(window + 10));
  };
  const std::string region_a = ContainerDir("uid-a_main");
  const std::string region_b = ContainerDir("uid-b_main");

  // Alone: the monitor lifts the limit.
  int64_t t0 = NowNs();
  Child alone({VGPU_SM_TENANT}, tenant_env(region_a, t0 + 1'000'000'000, t0 + 3'000'000'000),
              false);
  const double alone_after = WaitFor([&] { return SharingOf("uid-a") == Sharing::kAlone; }, 1.0);
  EXPECT_GE(alone_after, 0) << "never marked alone";
  // NVML's per-process samples over a tick give the container's utilization.
  double alone_utilization = 0;
  WaitFor(
      [&] {
        const NodeSnapshot s = monitor_->Snapshot();
        const ContainerGpuView* c = FindContainer(s, "uid-a");
        alone_utilization = std::max(alone_utilization, c != nullptr ? c->utilization_percent : 0);
        return alone_utilization > 60;
      },
      2.5);
  EXPECT_GT(alone_utilization, 60);
  const double alone_share = share_of(alone);
  EXPECT_GT(alone_share, 60) << "limit 30, alone: unlimited";

  // A second container arrives beside a running tenant of the first.
  t0 = NowNs();
  const int64_t start = t0 + 2'500'000'000;
  const int64_t end = start + 3'000'000'000;
  Child a({VGPU_SM_TENANT}, tenant_env(region_a, start, end), false);
  EXPECT_GE(WaitFor([&] { return SharingOf("uid-a") == Sharing::kAlone; }, 1.0), 0);
  std::this_thread::sleep_for(milliseconds(1000) - std::chrono::nanoseconds(NowNs() - t0));
  Child b({VGPU_SM_TENANT}, tenant_env(region_b, start, end), false);
  const double shared_after = WaitFor(
      [&] {
        return SharingOf("uid-a") == Sharing::kShared && SharingOf("uid-b") == Sharing::kShared;
      },
      1.4);
  EXPECT_GE(shared_after, 0) << "never marked shared";
  EXPECT_LT(NowNs(), start) << "marked shared only after the window began";
  EXPECT_EQ(RegionDevice0(region_a).sm_sharing, VGPU_SM_SHARING_SHARED);
  EXPECT_EQ(RegionDevice0(region_b).sm_sharing, VGPU_SM_SHARING_SHARED);
  const double share_a = share_of(a);
  const double share_b = share_of(b);
  EXPECT_LE(share_a, 34);
  EXPECT_LE(share_b, 34);
  EXPECT_GT(share_a, 20);
  EXPECT_GT(share_b, 20);
  std::printf(
      "alone: marked after %.2f s, share %.1f %% (utilization seen %.0f %%); second "
      "container: both marked shared %.2f s after it started; shares %.1f %% and %.1f %% "
      "(limit 30)\n",
      alone_after, alone_share, alone_utilization, shared_after, share_a, share_b);
}

// In a container with its own PID namespace NVML reports host PIDs: the monitor matches each slot
// to its host process and writes the host PID, and libvgpu then finds its NVML entry and charges
// its context memory (the probe's "hostpid" case: a 100 MiB limit, a 30 MiB context).
TEST_F(MonitorEngineTest, HostPidsLetLibvgpuChargeContextMemory) {
  constexpr int kOffset = 400000;
  setenv("VGPU_FAKE_HOST_PID_OFFSET", std::to_string(kOffset).c_str(), 1);  // the monitor's NVML
  const std::string region = ContainerDir("uid-h_main");
  Env env = ContainerEnv(region, "100m");
  env["VGPU_FAKE_CONTEXT_MEMORY"] = "30m";
  env["VGPU_FAKE_HOST_PID_OFFSET"] = std::to_string(kOffset);
  Child c({VGPU_PROBE, "hostpid"}, env, true);
  ASSERT_EQ(c.ReadLine(), "ready") << c.ReadAllStderr();
  StartMonitor(Options(), std::make_unique<OffsetProcSource>(kOffset));

  auto slot = RegionSlotOf(region, c.pid());
  ASSERT_TRUE(slot.has_value());
  EXPECT_EQ(slot->host_pid, c.pid() + kOffset);
  EXPECT_EQ(slot->host_start_time, slot->start_time);
  const NodeSnapshot s = monitor_->Snapshot();
  const ContainerGpuView* v = FindContainer(s, "uid-h");
  ASSERT_NE(v, nullptr);
  ASSERT_EQ(v->processes.size(), 1u);
  EXPECT_EQ(v->processes[0].pid, c.pid());
  EXPECT_EQ(v->processes[0].host_pid, c.pid() + kOffset);
  EXPECT_EQ(v->sharing, Sharing::kAlone) << "its NVML entry is its own, not an outsider's";

  ASSERT_TRUE(c.WriteLine("go"));
  EXPECT_EQ(c.ReadLine(), "listed 1 grabbed 70") << c.ReadAllStderr();
  c.CloseStdin();
  EXPECT_EQ(c.Wait(), 0);
}

// A tick re-reads the slots it saw and the lowest free one, where libvgpu puts a new process; a
// slot elsewhere is found at once when the device totals show memory the slots read do not explain,
// and by the periodic sweep otherwise. This process plays the container's: it maps a region laid
// out by hand and writes its own slots into it.
TEST_F(MonitorEngineTest, SlotsAwayFromTheLowestFreeOneAreFoundBySweeps) {
  const std::string path = ContainerDir("uid-s_main");
  WriteRegion(path, [](vgpu_region& r) { r.devices[0].mem_physical = 0; });
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  void* map = mmap(nullptr, sizeof(vgpu_region), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  ASSERT_NE(map, MAP_FAILED);
  auto* region = static_cast<vgpu_region*>(map);
  std::ifstream stat_file("/proc/self/stat");
  const std::string stat((std::istreambuf_iterator<char>(stat_file)), {});
  const std::optional<uint64_t> start = ParseStatStartTime(stat);
  ASSERT_TRUE(start.has_value());
  auto claim = [&](int index, uint64_t memory) {
    vgpu_region_proc& p = region->procs[index];
    p.start_time = *start;
    p.mem_used[0] = memory;
    __atomic_store_n(&p.pid, getpid(), __ATOMIC_RELEASE);
    __atomic_store_n(&p.status, VGPU_SLOT_ACTIVE, __ATOMIC_RELEASE);
    __atomic_fetch_add(&region->devices[0].mem_used, memory, __ATOMIC_RELEASE);
  };
  auto processes = [&] {
    const NodeSnapshot s = monitor_->Snapshot();
    const ContainerGpuView* c = FindContainer(s, "uid-s");
    return c != nullptr ? c->processes.size() : 0;
  };
  NodeMonitorOptions o = Options();
  o.nvml_library = "";
  StartMonitor(o);
  EXPECT_EQ(processes(), 0u);

  claim(700, kMiB);  // memory the slots followed do not explain: swept at the next tick
  monitor_->TickNow();
  EXPECT_EQ(processes(), 1u);
  EXPECT_EQ(__atomic_load_n(&region->procs[700].host_pid, __ATOMIC_ACQUIRE), getpid());

  claim(2, 0);  // near the lowest free slot: found at once
  monitor_->TickNow();
  EXPECT_EQ(processes(), 2u);

  claim(900, 0);  // no memory, far from the lowest free slot: the periodic sweep finds it
  int ticks = 0;
  while (processes() < 3 && ticks < 40) {
    monitor_->TickNow();
    ++ticks;
  }
  EXPECT_EQ(processes(), 3u);
  EXPECT_GT(ticks, 1) << "not by the tick's own reads";
  EXPECT_LE(ticks, 30);
  EXPECT_EQ(monitor_->Snapshot().tick_durations.count, static_cast<uint64_t>(ticks + 3));
  munmap(map, sizeof(vgpu_region));
}

// What the monitor cannot read of a container's folder is the container's state in the snapshot,
// with the problem in words: a region being created, a region scribbled (device count 2^32-1) —
// before, such a region was only a log line and the container was simply missing —, a folder
// flooded with entries or with region files. None of it costs a well-behaved container beside
// them its figures.
TEST_F(MonitorEngineTest, ContainerStatesShowWhatTheMonitorCannotRead) {
  pods_.Add("uid-ok", "team", "train");
  pods_.Add("uid-bad", "team", "evil");
  auto good = Hold(ContainerEnv(ContainerDir("uid-ok_main"), "100m"));
  const std::ofstream pending(ContainerDir("uid-pend_main"));  // empty: being created
  WriteRegion(ContainerDir("uid-bad_main"),
              [](vgpu_region& r) { r.header.device_count = 0xffffffffu; });
  const std::string flood = containers_ + "/uid-flood_main";
  fs::create_directories(flood);
  for (int i = 0; i < 300; ++i) {
    const std::ofstream junk(flood + "/junk" + std::to_string(i));
  }
  const std::string many = containers_ + "/uid-many_main";
  fs::create_directories(many);
  for (int i = 0; i < 6; ++i) WriteRegion(many + "/r" + std::to_string(i) + ".cache");
  const std::string late = ContainerDir("uid-late_main");
  WriteRegion(late);

  StartMonitor(Options());
  NodeSnapshot s = monitor_->Snapshot();
  ASSERT_EQ(s.containers.size(), 6u);
  const ContainerStatusView* ok = FindState(s, "uid-ok");
  ASSERT_NE(ok, nullptr);
  EXPECT_EQ(ok->state, ContainerState::kOk);
  EXPECT_EQ(ok->namespace_name, "team");
  EXPECT_EQ(ok->pod, "train");
  EXPECT_EQ(ok->regions, 1);
  EXPECT_EQ(ok->problem, "");
  const ContainerStatusView* pend = FindState(s, "uid-pend");
  ASSERT_NE(pend, nullptr);
  EXPECT_EQ(pend->state, ContainerState::kPending);
  EXPECT_EQ(pend->problem, "r.cache: empty (being created, or its creator died)");
  const ContainerStatusView* bad = FindState(s, "uid-bad");
  ASSERT_NE(bad, nullptr);
  EXPECT_EQ(bad->state, ContainerState::kUnusable);
  EXPECT_EQ(bad->pod, "evil");
  EXPECT_EQ(bad->regions, 0);
  EXPECT_EQ(bad->problem, "r.cache: corrupt: device_count 4294967295 exceeds 16");
  const ContainerStatusView* flooded = FindState(s, "uid-flood");
  ASSERT_NE(flooded, nullptr);
  EXPECT_EQ(flooded->state, ContainerState::kOverLimits);
  EXPECT_TRUE(flooded->problem.starts_with("folder holds more than 256 entries;"))
      << flooded->problem;
  const ContainerStatusView* too_many = FindState(s, "uid-many");
  ASSERT_NE(too_many, nullptr);
  EXPECT_EQ(too_many->state, ContainerState::kOverLimits);
  EXPECT_EQ(too_many->regions, 4);
  EXPECT_TRUE(too_many->problem.starts_with("folder holds more than 4 *.cache files;"))
      << too_many->problem;
  EXPECT_EQ(FindState(s, "uid-late")->state, ContainerState::kOk);
  EXPECT_NE(FindContainer(s, "uid-late"), nullptr);
  // The good container's figures.
  const ContainerGpuView* g = FindContainer(s, "uid-ok");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->memory_used_bytes, 12 * kMiB);
  ASSERT_EQ(g->processes.size(), 1u);
  EXPECT_EQ(g->processes[0].host_pid, good->pid());
  EXPECT_EQ(LogLinesWith("uid-flood_main", "more than 256 entries"), 1)
      << ::testing::PrintToString(Log());

  // A region scribbled after it was read: dropped at the next tick, its container unusable, and
  // none of its records in the snapshot.
  {
    const int fd = open(late.c_str(), O_RDWR | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    const char bad_uuid[] = "GPU-\xff\n";
    ASSERT_EQ(pwrite(fd, bad_uuid, sizeof bad_uuid, offsetof(vgpu_region, devices)),
              static_cast<ssize_t>(sizeof bad_uuid));
    close(fd);
  }
  monitor_->TickNow();
  s = monitor_->Snapshot();
  EXPECT_EQ(FindContainer(s, "uid-late"), nullptr);
  ASSERT_NE(FindState(s, "uid-late"), nullptr);
  EXPECT_EQ(FindState(s, "uid-late")->state, ContainerState::kUnusable);
  EXPECT_EQ(FindState(s, "uid-late")->problem,
            "r.cache: corrupt: device record 0: UUID \"GPU-\\xff\\x0a\" is no NVML UUID");
  for (const GpuView& gpu : s.gpus) EXPECT_EQ(gpu.uuid.find('\xff'), std::string::npos);
  EXPECT_EQ(FindContainer(s, "uid-ok")->memory_used_bytes, 12 * kMiB);
}

// What libvgpu marks in a region: a region it found corrupt (VGPU_REGION_FLAG_UNUSABLE: its
// processes refuse allocations) is the container's state unusable with the reason, not silence; a
// limit of 0 bytes (VGPU_DEVICE_FLAG_NO_MEMORY) is a limit of 0, not "none".
TEST_F(MonitorEngineTest, WhatLibvgpuMarksInARegionIsShown) {
  WriteRegion(ContainerDir("uid-corrupt_main"),
              [](vgpu_region& r) { r.header.flags = VGPU_REGION_FLAG_UNUSABLE; });
  WriteRegion(ContainerDir("uid-zero_main"), [](vgpu_region& r) {
    r.devices[0].mem_limit = 0;
    r.devices[0].flags = VGPU_DEVICE_FLAG_NO_MEMORY;
  });
  WriteRegion(ContainerDir("uid-none_main"));
  NodeMonitorOptions o = Options();
  o.nvml_library = "";
  StartMonitor(o);
  const NodeSnapshot s = monitor_->Snapshot();
  const ContainerStatusView* corrupt = FindState(s, "uid-corrupt");
  ASSERT_NE(corrupt, nullptr);
  EXPECT_EQ(corrupt->state, ContainerState::kUnusable);
  EXPECT_EQ(corrupt->problem,
            "r.cache: corrupt: libvgpu found it so and marked it unusable; the container's "
            "processes refuse GPU memory allocations until it restarts");
  EXPECT_EQ(FindContainer(s, "uid-corrupt"), nullptr);
  const ContainerGpuView* zero = FindContainer(s, "uid-zero");
  ASSERT_NE(zero, nullptr);
  EXPECT_TRUE(zero->no_memory);
  EXPECT_EQ(zero->memory_limit_bytes, 0u);
  const ContainerGpuView* none = FindContainer(s, "uid-none");
  ASSERT_NE(none, nullptr);
  EXPECT_FALSE(none->no_memory);
}

// A folder a gone pod left with thousands of files nested 30 levels deep: removed over a few ticks
// (at most max_removals_per_tick entries a tick: 20,000 in production, 1,000 here), while the other
// containers stay listed. Before, the cleanup refused a tree deeper than 8 levels: such a folder
// stayed forever.
TEST_F(MonitorEngineTest, AGonePodsHugeDeepFolderIsRemovedOverTicks) {
  pods_.Add("uid-here", "ns", "here");
  WriteRegion(ContainerDir("uid-here_main"));
  const std::string gone = containers_ + "/uid-gone_main";
  std::string deep = gone;
  for (int level = 0; level < 30; ++level) deep += "/d";
  fs::create_directories(deep);
  for (int i = 0; i < 2'500; ++i) {
    const int fd =
        open((gone + "/f" + std::to_string(i)).c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    close(fd);
  }
  std::ofstream(deep + "/bottom") << "x";
  const time_t old = time(nullptr) - 3600;
  const timespec times[2] = {{old, 0}, {old, 0}};
  for (const auto& e : fs::recursive_directory_iterator(gone)) {
    ASSERT_EQ(utimensat(AT_FDCWD, e.path().c_str(), times, AT_SYMLINK_NOFOLLOW), 0);
  }
  ASSERT_EQ(utimensat(AT_FDCWD, gone.c_str(), times, 0), 0);

  NodeMonitorOptions o = Options();
  o.nvml_library = "";
  o.max_removals_per_tick = 1'000;
  StartMonitor(o);  // its first tick starts the removal
  int ticks = 1;
  while (fs::exists(gone) && ticks < 10) {
    EXPECT_EQ(FindState(monitor_->Snapshot(), "uid-gone"), nullptr) << "on its way out";
    monitor_->TickNow();
    ++ticks;
  }
  EXPECT_FALSE(fs::exists(gone));
  EXPECT_EQ(ticks, 3);  // 2,532 entries, 1,000 a tick
  EXPECT_EQ(LogLinesWith("removed", "uid-gone_main"), 1) << ::testing::PrintToString(Log());
  const NodeSnapshot s = monitor_->Snapshot();
  EXPECT_NE(FindContainer(s, "uid-here"), nullptr);
  EXPECT_EQ(FindState(s, "uid-gone"), nullptr);
}

}  // namespace
}  // namespace vgpu::monitor
