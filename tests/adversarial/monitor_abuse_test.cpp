// A tenant against the node monitor.
//
// Each container's folder (<hook>/vgpu/containers/<pod-uid>_<container>) is mounted read-write into
// the container: the tenant can put any files, links, FIFOs, device nodes (with CAP_MKNOD) and
// directory trees there, and write anything into its region while its processes map it. The
// monitor reads every folder of the node. One tenant must not blind the monitor for the others,
// take its memory, stall its ticks, make it open what it must not, or make it report wrong figures
// for the other containers; what the monitor cannot read must show (the container's state in
// /api/v1/snapshot and vgpu_container_region_state).
//
// The monitor here is the vgpu-monitor binary (--no-kube, the fake NVML, a 200 ms tick); the
// well-behaved container beside the tenant is a real process running libvgpu.so against the fake
// driver (tests/libvgpu/support's probe, holding a 10 MiB context and 2 MiB under a 100 MiB limit).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/monitor/proc_parse.h"
#include "core/monitor/snapshot_json.h"
#include "process_runner.h"
#include "report.h"
#include "tests/monitor/monitor_process.h"
#include "vgpu/region_layout.h"

namespace vgpu::monitor {
namespace {

using adversarial::Latencies;
using adversarial::MiB;
using adversarial::Report;
using adversarial::RssKib;
using testing::Child;

constexpr uint64_t kMiB = 1ULL << 20;
constexpr const char* kGpu0 = "GPU-00000000-0000-0000-0000-000000000000";
constexpr const char* kTenant = "a tenant (its container's folder and region)";

double NowS() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A region's header and device record 0 as libvgpu lays them out.
void LayOut(vgpu_region_header& h, vgpu_region_device& d) {
  h.magic = VGPU_REGION_MAGIC;
  h.version = VGPU_REGION_VERSION;
  h.header_size = sizeof(vgpu_region_header);
  h.file_size = sizeof(vgpu_region);
  h.max_devices = VGPU_REGION_MAX_DEVICES;
  h.max_procs = VGPU_REGION_MAX_PROCS;
  h.device_count = 1;
  (void)std::snprintf(d.uuid, sizeof d.uuid, "%s", kGpu0);
  d.mem_physical = 16ULL << 30;
}

// A valid region as a sparse file: its size, the header and one device record; the slot table
// is a hole (what the 4,200 files were: 680 KiB each on paper, 8 KiB on disk).
void WriteSparseRegion(const std::string& path) {
  vgpu_region_header h{};
  vgpu_region_device d{};
  LayOut(h, d);
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0) << path;
  ASSERT_EQ(ftruncate(fd, sizeof(vgpu_region)), 0);
  ASSERT_EQ(pwrite(fd, &h, sizeof h, 0), static_cast<ssize_t>(sizeof h));
  ASSERT_EQ(pwrite(fd, &d, sizeof d, offsetof(vgpu_region, devices)),
            static_cast<ssize_t>(sizeof d));
  close(fd);
}

// A region file mapped into this process, as a tenant's process maps its own.
class MappedRegion {
 public:
  explicit MappedRegion(const std::string& path) {
    WriteSparseRegion(path);
    const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) return;
    void* p = mmap(nullptr, sizeof(vgpu_region), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p != MAP_FAILED) region_ = static_cast<vgpu_region*>(p);
  }
  ~MappedRegion() {
    if (region_ != nullptr) munmap(region_, sizeof(vgpu_region));
  }
  MappedRegion(const MappedRegion&) = delete;
  MappedRegion& operator=(const MappedRegion&) = delete;
  vgpu_region* get() const { return region_; }

 private:
  vgpu_region* region_ = nullptr;
};

class MonitorAbuse : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "vgpu-monitor-abuse-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    containers_ = (dir_ / "vgpu" / "containers").string();
    fs::create_directories(containers_);
    fs::create_directories(dir_ / "gpu");
  }
  void TearDown() override {
    good_.reset();
    monitor_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  void StartMonitor() {
    monitor_ = std::make_unique<MonitorProcess>(
        dir_,
        std::vector<std::string>{"--no-kube", "--node-name", "adversarial", "--vgpu-dir",
                                 (dir_ / "vgpu").string(), "--metrics-bind", "127.0.0.1:0",
                                 "--tick", "200"},
        std::vector<std::string>{std::string("LD_LIBRARY_PATH=") + VGPU_FAKE_DRIVER_DIR,
                                 "VGPU_FAKE_STATE_DIR=" + (dir_ / "gpu").string()});
    ASSERT_TRUE(monitor_->spawned());
    const int port = monitor_->WaitForPort(std::chrono::seconds(60));
    ASSERT_GT(port, 0) << monitor_->stderr_text();
    http_ = std::make_unique<httplib::Client>("127.0.0.1", port);
    http_->set_read_timeout(30, 0);
  }

  // GET `path`: the status (0: no answer) and the body.
  std::pair<int, std::string> Get(const std::string& path, double* ms = nullptr) {
    const double start = NowS();
    auto res = http_->Get(path);
    if (ms != nullptr) *ms = (NowS() - start) * 1000;
    if (!res) return {0, ""};
    return {res->status, res->body};
  }
  std::optional<NodeSnapshot> Snapshot() {
    auto [status, body] = Get("/api/v1/snapshot");
    if (status != 200) return std::nullopt;
    auto s = SnapshotFromJson(body);
    if (!s.ok()) return std::nullopt;
    return *s;
  }
  // The tick histogram's count and sum (vgpu_monitor_tick_duration_seconds).
  struct Ticks {
    uint64_t count = 0;
    double sum = 0;
  };
  Ticks TickStats() {
    Ticks t;
    const std::string page = Get("/metrics").second;
    for (const auto& [name, out] : {std::pair{"vgpu_monitor_tick_duration_seconds_sum{", 0},
                                    std::pair{"vgpu_monitor_tick_duration_seconds_count{", 1}}) {
      const size_t at = page.find(name);
      if (at == std::string::npos) continue;
      const double v = std::stod(page.substr(page.find("} ", at) + 2));
      if (out == 0) {
        t.sum = v;
      } else {
        t.count = static_cast<uint64_t>(v);
      }
    }
    return t;
  }
  // Waits until `n` more ticks ran (false when they did not come in `timeout_s`).
  bool WaitTicks(uint64_t n, double timeout_s) {
    const uint64_t from = TickStats().count;
    return WaitFor([&] { return TickStats().count >= from + n; }, timeout_s);
  }
  template <typename F>
  static bool WaitFor(F done, double timeout_s) {
    const double end = NowS() + timeout_s;
    while (NowS() < end) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return done();
  }
  long MonitorRss() const { return RssKib(monitor_->pid()); }
  size_t MonitorFds() const {
    std::error_code ec;
    size_t n = 0;
    for (auto it = fs::directory_iterator("/proc/" + std::to_string(monitor_->pid()) + "/fd", ec);
         !ec && it != fs::directory_iterator(); it.increment(ec)) {
      ++n;
    }
    return n;
  }
  int StderrLinesWith(const std::string& text) const {
    int n = 0;
    std::istringstream in(monitor_->stderr_text());
    for (std::string line; std::getline(in, line);) n += line.find(text) != std::string::npos;
    return n;
  }

  // The well-behaved container: one process with libvgpu.so holding a 10 MiB context and 2 MiB.
  std::string GoodRegion() const { return containers_ + "/uid-good_main/r.cache"; }
  void StartGoodContainer() {
    fs::create_directories(containers_ + "/uid-good_main");
    good_ = std::make_unique<Child>(
        std::vector<std::string>{VGPU_PROBE, "hold"},
        std::map<std::string, std::string>{{"LD_PRELOAD", VGPU_LIBVGPU_SO},
                                           {"LD_LIBRARY_PATH", VGPU_FAKE_DRIVER_DIR},
                                           {"VGPU_FAKE_STATE_DIR", (dir_ / "gpu").string()},
                                           {"VGPU_FAKE_CONTEXT_MEMORY", "10m"},
                                           {"VGPU_FAKE_MODULE_MEMORY", "0"},
                                           {"CUDA_DEVICE_MEMORY_SHARED_CACHE", GoodRegion()},
                                           {"CUDA_DEVICE_MEMORY_LIMIT", "100m"}},
        true);
    ASSERT_EQ(good_->ReadLine(), "holding") << good_->ReadAllStderr();
  }
  // Whether the snapshot shows the good container with its right figures; what is wrong if not.
  bool GoodIsRight(const NodeSnapshot& s, std::string* why) const {
    const ContainerGpuView* v = nullptr;
    for (const GpuView& g : s.gpus) {
      for (const ContainerGpuView& c : g.containers) {
        if (c.pod_uid == "uid-good") v = &c;
      }
    }
    const ContainerStatusView* st = State(s, "uid-good");
    if (v == nullptr) {
      *why = "the good container is not monitored" +
             (st != nullptr
                  ? " (" + std::string(ContainerStateName(st->state)) + ": " + st->problem + ")"
                  : std::string());
      return false;
    }
    if (v->memory_used_bytes != 12 * kMiB || v->memory_limit_bytes != 100 * kMiB ||
        v->processes.size() != 1 || v->processes[0].host_pid != good_->pid() || st == nullptr ||
        st->state != ContainerState::kOk) {
      *why = "the good container's figures are wrong: used " +
             std::to_string(v->memory_used_bytes) + ", limit " +
             std::to_string(v->memory_limit_bytes) + ", " + std::to_string(v->processes.size()) +
             " processes";
      return false;
    }
    return true;
  }
  bool WaitGoodRight(double timeout_s, std::string* why) {
    return WaitFor(
        [&] {
          auto s = Snapshot();
          if (!s) {
            *why = "no snapshot from the monitor";
            return false;
          }
          return GoodIsRight(*s, why);
        },
        timeout_s);
  }
  // Requests of a good client (a scraper, `vgpu top`) while the abuse goes on: the snapshot,
  // each checked for the good container's figures.
  Latencies GoodClient(int requests, bool* all_right, std::string* why) {
    Latencies l;
    *all_right = true;
    for (int i = 0; i < requests; ++i) {
      double ms = 0;
      auto [status, body] = Get("/api/v1/snapshot", &ms);
      auto s = status == 200 ? SnapshotFromJson(body) : Result<NodeSnapshot>(Internal("no answer"));
      if (!s.ok()) {
        ++l.failed;
        *all_right = false;
        *why = "snapshot: HTTP " + std::to_string(status);
      } else {
        l.Add(ms);
        if (!GoodIsRight(*s, why)) *all_right = false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return l;
  }
  static const ContainerStatusView* State(const NodeSnapshot& s, const std::string& uid) {
    for (const ContainerStatusView& c : s.containers) {
      if (c.pod_uid == uid) return &c;
    }
    return nullptr;
  }
  static bool HasView(const NodeSnapshot& s, const std::string& uid) {
    for (const GpuView& g : s.gpus) {
      for (const ContainerGpuView& c : g.containers) {
        if (c.pod_uid == uid) return true;
      }
    }
    return false;
  }
  std::string Figures(long rss_before, long rss_after, const Ticks& t0, const Ticks& t1,
                      const Latencies& l, bool right) const {
    const double tick_ms = t1.count > t0.count
                               ? (t1.sum - t0.sum) / static_cast<double>(t1.count - t0.count) * 1000
                               : -1;
    char buf[320];
    (void)std::snprintf(buf, sizeof buf,
                        "monitor RSS %s → %s; mean tick under abuse %.1f ms (%llu ticks); %s; "
                        "good container's figures %s",
                        MiB(rss_before).c_str(), MiB(rss_after).c_str(), tick_ms,
                        static_cast<unsigned long long>(t1.count - t0.count), l.Text().c_str(),
                        right ? "right throughout" : "WRONG");
    return buf;
  }

  fs::path dir_;
  std::string containers_;
  std::unique_ptr<MonitorProcess> monitor_;
  std::unique_ptr<httplib::Client> http_;
  std::unique_ptr<Child> good_;
};

// Issue 42 item 6: 4,200 sparse region files in one folder filled the monitor's 4,096-entry
// table of guarded mappings; a container that came after was not monitored, the monitor held
// 4,100 descriptors and its RSS went 17 → 287 MiB (release build), each tick took seconds.
// Now a folder gets at most 4 region files and 256 entries read; the rest is ignored and the
// container reported over_limits, once in the log.
TEST_F(MonitorAbuse, AFloodOfRegionFilesBlindsNoOne) {
  StartMonitor();
  ASSERT_TRUE(WaitTicks(3, 30)) << monitor_->stderr_text();
  const long rss_before = MonitorRss();
  const Ticks t0 = TickStats();
  const std::string evil = containers_ + "/uid-evil_main";
  fs::create_directories(evil);
  for (int i = 0; i < 4200; ++i) {
    char name[32];
    (void)std::snprintf(name, sizeof name, "/f%05d.cache", i);
    WriteSparseRegion(evil + name);
  }
  ASSERT_TRUE(WaitTicks(3, 90)) << "the monitor stopped ticking";
  StartGoodContainer();  // a container that comes after the flood
  std::string why;
  const bool seen = WaitGoodRight(20, &why);
  bool right = false;
  const Latencies l = GoodClient(20, &right, &why);
  const Ticks t1 = TickStats();
  const long rss_after = MonitorRss();
  const size_t fds = MonitorFds();
  auto s = Snapshot();
  ASSERT_TRUE(s.has_value());
  const ContainerStatusView* st = State(*s, "uid-evil");
  EXPECT_TRUE(seen && right) << why;
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(st->state, ContainerState::kOverLimits) << st->problem;
  EXPECT_EQ(st->regions, 4);
  EXPECT_LT(rss_after - rss_before, 32 * 1024) << "KiB";
  EXPECT_LT(fds, 64u);
  // A line when the monitor first sees the flood, another if a tick caught it half-made (the
  // problem's words change), never one per file: at most 5 a minute for a container.
  const int lines = StderrLinesWith("uid-evil_main");
  EXPECT_GE(lines, 1) << monitor_->stderr_text();
  EXPECT_LE(lines, 5) << monitor_->stderr_text();
  EXPECT_LT((t1.sum - t0.sum) / static_cast<double>(t1.count - t0.count), 1.0);
  Report(kTenant, "4,200 sparse region files in its folder (then a new container starts)",
         std::string(seen && right ? "held" : "BROKEN") +
             ": the new container monitored with right figures; the flood over_limits (4 regions "
             "read), " +
             std::to_string(lines) + " log line(s); " + std::to_string(fds) + " descriptors",
         Figures(rss_before, rss_after, t0, t1, l, seen && right));
}

// 20,000 entries and a directory chain 300 levels deep in one folder, its time touched every
// 100 ms so that it is listed again every tick: at most 256 entries are read per listing, nothing
// is walked for regions below the folder.
TEST_F(MonitorAbuse, AWideAndDeepFolderCostsItsTickNothing) {
  StartGoodContainer();
  StartMonitor();
  std::string why;
  ASSERT_TRUE(WaitGoodRight(20, &why)) << why;
  const long rss_before = MonitorRss();
  const Ticks t0 = TickStats();
  const std::string evil = containers_ + "/uid-wide_main";
  std::string deep = evil;
  for (int level = 0; level < 300; ++level) deep += "/d";
  fs::create_directories(deep);
  for (int i = 0; i < 20'000; ++i) {
    const int fd =
        open((evil + "/e" + std::to_string(i)).c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    close(fd);
  }
  std::atomic<bool> stop{false};
  std::thread toucher([&] {
    while (!stop) {
      (void)utimensat(AT_FDCWD, evil.c_str(), nullptr, 0);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  ASSERT_TRUE(WaitTicks(3, 60));
  bool right = false;
  const Latencies l = GoodClient(20, &right, &why);
  const Ticks t1 = TickStats();
  const long rss_after = MonitorRss();
  stop = true;
  toucher.join();
  auto s = Snapshot();
  ASSERT_TRUE(s.has_value());
  ASSERT_NE(State(*s, "uid-wide"), nullptr);
  EXPECT_EQ(State(*s, "uid-wide")->state, ContainerState::kOverLimits);
  EXPECT_TRUE(right) << why;
  EXPECT_LT(rss_after - rss_before, 32 * 1024) << "KiB";
  EXPECT_LT((t1.sum - t0.sum) / static_cast<double>(t1.count - t0.count), 1.0);
  Report(kTenant,
         "20,000 entries and a 300-level directory chain in its folder, touched every 100 ms",
         std::string(right ? "held" : "BROKEN") +
             ": 256 entries read per listing, the folder over_limits",
         Figures(rss_before, rss_after, t0, t1, l, right));
}

// Links to /etc/shadow, to /dev/zero and to the good container's region; a FIFO with a writer
// waiting for a reader; a device node; a region with a second name (hard link). None is followed
// or opened: the FIFO's writer stays blocked, no region of another container is read as this one's,
// the two names of one region are refused (read under both, it would count twice). The tenant's
// folders are reported unusable with the reason.
TEST_F(MonitorAbuse, LinksFifosDevicesAndSecondNamesAreNeitherFollowedNorOpened) {
  StartGoodContainer();
  const std::string links = containers_ + "/uid-links_main";
  const std::string nodes = containers_ + "/uid-nodes_main";
  fs::create_directories(links);
  fs::create_directories(nodes);
  ASSERT_EQ(symlink("/etc/shadow", (links + "/a.cache").c_str()), 0);
  ASSERT_EQ(symlink(GoodRegion().c_str(), (links + "/b.cache").c_str()), 0);
  ASSERT_EQ(symlink("/dev/zero", (links + "/c.cache").c_str()), 0);
  const std::string fifo = links + "/d.cache";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::atomic<bool> writer_in{false};
  std::thread writer([&] {
    const int fd = open(fifo.c_str(), O_WRONLY | O_CLOEXEC);  // until someone opens it to read
    writer_in = true;
    if (fd >= 0) close(fd);
  });
  const bool device = mknod((nodes + "/e.cache").c_str(), S_IFCHR | 0600, makedev(1, 5)) == 0;
  WriteSparseRegion(nodes + "/f.cache");
  ASSERT_EQ(link((nodes + "/f.cache").c_str(), (nodes + "/g.cache").c_str()), 0);

  StartMonitor();
  std::string why;
  const bool seen = WaitGoodRight(20, &why);
  const long rss_before = MonitorRss();
  const Ticks t0 = TickStats();
  ASSERT_TRUE(WaitTicks(5, 30));
  bool right = false;
  const Latencies l = GoodClient(10, &right, &why);
  const Ticks t1 = TickStats();
  const long rss_after = MonitorRss();
  const bool fifo_opened = writer_in;
  // Let the writer go.
  const int reader = open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  writer.join();
  if (reader >= 0) close(reader);

  auto s = Snapshot();
  ASSERT_TRUE(s.has_value());
  EXPECT_TRUE(seen && right) << why;
  EXPECT_FALSE(fifo_opened) << "the monitor opened the FIFO";
  EXPECT_FALSE(HasView(*s, "uid-links")) << "another container's region read as this one's";
  EXPECT_FALSE(HasView(*s, "uid-nodes"));
  for (const char* uid : {"uid-links", "uid-nodes"}) {
    const ContainerStatusView* st = State(*s, uid);
    ASSERT_NE(st, nullptr) << uid;
    EXPECT_EQ(st->state, ContainerState::kUnusable) << uid;
  }
  EXPECT_EQ(State(*s, "uid-links")->problem,
            "a.cache: a symbolic link, not a region (links in a container's folder are never "
            "followed)");
  EXPECT_NE(State(*s, "uid-nodes")
                ->problem.find(device ? "e.cache: not a regular file (a "
                                        "character device)"
                                      : "f.cache: has 2 names"),
            std::string::npos)
      << State(*s, "uid-nodes")->problem;
  EXPECT_EQ(StderrLinesWith("has 2 names (hard links)"), 2) << monitor_->stderr_text();
  Report(kTenant,
         std::string("links to /etc/shadow, /dev/zero and the good container's region; a FIFO "
                     "with a waiting writer; ") +
             (device ? "a character device; " : "") + "a region with a second name",
         std::string(!fifo_opened && seen && right ? "held" : "BROKEN") +
             ": nothing followed or opened (the FIFO's writer stayed blocked), no region read as "
             "another container's, both folders unusable with the reason",
         Figures(rss_before, rss_after, t0, t1, l, seen && right));
}

// Issue 42 item 8, monitor side: the tenant's own process maps its region and writes anything into
// it. Phase 1: every one of the 1,024 slots claimed, their start times changed every 100 ms (each
// tick looks for their owners in /proc again), counters at 2^64-2, a kernel end time of 2^63 (which
// overflowed the monitor's arithmetic: UBSan ended the dev build's monitor). Phase 2: the device
// count set to 2^32-1. Phase 3: a GPU UUID of bytes that are not UTF-8 (the JSON API answered 500
// for every container, and Prometheus rejects a page with such a label). The monitor keeps ticking,
// the good container's figures stay right, and the scribbled region is reported unusable.
TEST_F(MonitorAbuse, AScribbledRegionMisleadsNoOneAboutTheOthers) {
  StartGoodContainer();
  StartMonitor();
  std::string why;
  ASSERT_TRUE(WaitGoodRight(20, &why)) << why;
  const long rss_before = MonitorRss();
  const Ticks t0 = TickStats();

  fs::create_directories(containers_ + "/uid-scribble_main");
  MappedRegion mapped(containers_ + "/uid-scribble_main/r.cache");
  vgpu_region* r = mapped.get();
  ASSERT_NE(r, nullptr);
  std::ifstream stat_file("/proc/self/stat");
  const std::string stat((std::istreambuf_iterator<char>(stat_file)), {});
  const std::optional<uint64_t> start = ParseStatStartTime(stat);
  ASSERT_TRUE(start.has_value());
  const uint64_t huge = UINT64_MAX - 1;
  for (int i = 0; i < VGPU_REGION_MAX_PROCS; ++i) {
    vgpu_region_proc& p = r->procs[i];
    p.start_time = i == 0 ? *start : 1000 + i;
    for (int d = 0; d < VGPU_REGION_MAX_DEVICES; ++d) {
      p.mem_used[d] = huge;
      p.mem_overhead[d] = huge;
      p.sm_last_kernel_ns[d] = uint64_t{1} << 63;
    }
    __atomic_store_n(&p.pid, i == 0 ? getpid() : i + 1, __ATOMIC_RELEASE);
    __atomic_store_n(&p.status, VGPU_SLOT_ACTIVE, __ATOMIC_RELEASE);
  }
  __atomic_store_n(&r->devices[0].mem_used, huge, __ATOMIC_RELEASE);
  std::atomic<bool> stop{false};
  std::thread churn([&] {  // new owners every 100 ms: each tick scans /proc for them
    for (uint64_t round = 0; !stop; ++round) {
      for (int i = 1; i < VGPU_REGION_MAX_PROCS; ++i) {
        __atomic_store_n(&r->procs[i].start_time, 1000 + i + round, __ATOMIC_RELAXED);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  const bool ticking = WaitTicks(5, 30);
  bool right1 = false;
  const Latencies l1 = GoodClient(10, &right1, &why);
  const Ticks t1 = TickStats();
  stop = true;
  churn.join();
  auto s1 = Snapshot();
  EXPECT_TRUE(ticking) << monitor_->stderr_text();
  EXPECT_TRUE(right1) << why;
  ASSERT_TRUE(s1.has_value()) << monitor_->stderr_text();
  ASSERT_TRUE(HasView(*s1, "uid-scribble")) << "its own figures may be absurd, but it is seen";
  EXPECT_FALSE(monitor_->Exited(std::chrono::milliseconds(0))) << monitor_->stderr_text();

  // Phase 2: the device count.
  __atomic_store_n(&r->header.device_count, 0xffffffffu, __ATOMIC_RELEASE);
  const bool unusable = WaitFor(
      [&] {
        auto s = Snapshot();
        const ContainerStatusView* st = s ? State(*s, "uid-scribble") : nullptr;
        return st != nullptr && st->state == ContainerState::kUnusable &&
               st->problem == "r.cache: corrupt: device_count 4294967295 exceeds 16" &&
               !HasView(*s, "uid-scribble");
      },
      10);
  EXPECT_TRUE(unusable) << ::testing::PrintToString(Snapshot()->containers.size());
  bool right2 = false;
  const Latencies l2 = GoodClient(5, &right2, &why);
  EXPECT_TRUE(right2) << why;

  // Phase 3: a UUID of bytes that are not UTF-8, with a quote and a newline.
  std::memcpy(r->devices[0].uuid, "GPU-\xff\xfe\"\n}", 10);
  __atomic_store_n(&r->header.device_count, 1u, __ATOMIC_RELEASE);
  ASSERT_TRUE(WaitTicks(3, 30));
  auto [status, body] = Get("/api/v1/snapshot");
  EXPECT_EQ(status, 200) << body;
  auto [metrics_status, page] = Get("/metrics");
  EXPECT_EQ(metrics_status, 200);
  bool ascii = true;
  for (const char c : page) ascii = ascii && static_cast<unsigned char>(c) < 0x80;
  EXPECT_TRUE(ascii) << "a byte that is not UTF-8 makes Prometheus reject the whole page";
  auto s3 = Snapshot();
  ASSERT_TRUE(s3.has_value());
  ASSERT_NE(State(*s3, "uid-scribble"), nullptr);
  EXPECT_EQ(State(*s3, "uid-scribble")->state, ContainerState::kUnusable);
  bool right3 = false;
  const Latencies l3 = GoodClient(5, &right3, &why);
  EXPECT_TRUE(right3) << why;
  EXPECT_EQ(Get("/healthz").first, 200);
  const long rss_after = MonitorRss();

  Latencies all = l1;
  for (const Latencies* l : {&l2, &l3}) {
    all.ms.insert(all.ms.end(), l->ms.begin(), l->ms.end());
    all.failed += l->failed;
  }
  const bool held = ticking && right1 && right2 && right3 && unusable && status == 200 && ascii;
  Report(kTenant,
         "its region scribbled: 1,024 slots claimed with owners changing every 100 ms, counters "
         "2^64-2, kernel time 2^63; then device count 2^32-1; then a UUID of non-UTF-8 bytes",
         std::string(held ? "held" : "BROKEN") +
             ": monitor alive, JSON and metrics valid, the region unusable with the reason",
         Figures(rss_before, rss_after, t0, t1, all, right1 && right2 && right3));
}

}  // namespace
}  // namespace vgpu::monitor
