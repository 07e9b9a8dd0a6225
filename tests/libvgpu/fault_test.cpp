// libvgpu under faults (issue 21): a storm of SIGKILLs on one container's processes, with two
// survivors holding known memory; afterwards the region's usage is exactly theirs, nothing hangs
// and a fresh process starts at once. Probe programs (support/probe.c: storm, survive, usage, init)
// run with libvgpu.so preloaded against the fake driver.
//
// Knobs (environment of the test binary): VGPU_STORM_KILLS (default 1000), VGPU_STORM_PARALLEL
// (default 4), VGPU_STORM_SEED (default 21).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "container_test.h"
#include "process_runner.h"
#include "vgpu/region_layout.h"

namespace {

using vgpu::testing::Child;
using vgpu::testing::RunProcess;
using vgpu::testing::RunResult;
using Env = std::map<std::string, std::string>;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kMiB = 1ull << 20;
constexpr int kReadyTimeoutMs = 10000;  // watchdog: a process must reach its loop by then
constexpr int kDeathTimeoutMs = 10000;  // and be gone this long after SIGKILL

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

double Ms(Clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

class FaultTest : public vgpu::testing::ContainerTest {
 protected:
  // The region as the node monitor reads it: device 0's total, the sum of the slots' counters and
  // the pids holding a slot.
  struct RegionView {
    uint64_t total = 0;
    uint64_t slot_sum = 0;
    std::vector<int> pids;
  };
  RegionView ReadRegion() const {
    RegionView v;
    const int fd = open(region_.c_str(), O_RDONLY);
    if (fd < 0) return v;
    void* m = mmap(nullptr, sizeof(vgpu_region), PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED) return v;
    const auto* r = static_cast<const vgpu_region*>(m);
    v.total = __atomic_load_n(&r->devices[0].mem_used, __ATOMIC_ACQUIRE);
    for (const auto& slot : r->procs) {
      const int pid = __atomic_load_n(&slot.pid, __ATOMIC_ACQUIRE);
      v.slot_sum += __atomic_load_n(&slot.mem_used[0], __ATOMIC_ACQUIRE) +
                    __atomic_load_n(&slot.mem_overhead[0], __ATOMIC_ACQUIRE);
      if (pid != 0) v.pids.push_back(pid);
    }
    munmap(m, sizeof(vgpu_region));
    return v;
  }
};

// One survivor: asks for one round (alloc, launch, free) and returns the "alive" line, failing
// the test when it does not answer within the watchdog.
std::string Ping(Child& c) {
  std::string line;
  EXPECT_TRUE(c.WriteLine("ping"));
  EXPECT_TRUE(c.ReadLineWithin(kReadyTimeoutMs, &line)) << "survivor " << c.pid() << " hangs";
  return line;
}

TEST_F(FaultTest, SigkillStormLeavesExactlyTheSurvivorsUsage) {
  const int kills = EnvInt("VGPU_STORM_KILLS", 1000);
  const int parallel = std::max(1, EnvInt("VGPU_STORM_PARALLEL", 4));
  const unsigned seed = static_cast<unsigned>(EnvInt("VGPU_STORM_SEED", 21));
  // 64 MiB shared by 2 survivors (3 + 5 MiB) and the workers (up to 8 blocks of <= 2 MiB each):
  // some of the workers' allocations are refused, so the full reap before a refusal runs too.
  const Env env = BaseEnv("64m");
  const uint64_t held = 8 * kMiB;
  Child a({VGPU_PROBE, "survive", std::to_string(3 * kMiB)}, env, true);
  Child b({VGPU_PROBE, "survive", std::to_string(5 * kMiB)}, env, true);
  for (Child* c : {&a, &b}) {
    std::string line;
    ASSERT_TRUE(c->ReadLineWithin(kReadyTimeoutMs, &line)) << c->ReadAllStderr();
    ASSERT_EQ(line, "holding");
  }

  struct Worker {
    std::unique_ptr<Child> child;
    Clock::time_point started;
    Clock::time_point
        kill_at;  // time_point::max(): killed only once it is ready (a liveness check)
    bool ready = false;
  };
  std::mt19937 rng(seed);
  std::vector<Worker> workers(static_cast<size_t>(parallel));
  int spawned = 0;
  int killed = 0;
  int killed_before_ready = 0;
  int watched = 0;
  double slowest_ready_ms = 0;
  auto spawn = [&](Worker& w) {
    w.child = std::make_unique<Child>(std::vector<std::string>{VGPU_PROBE, "storm"}, env, false);
    w.started = Clock::now();
    w.ready = false;
    // Every 8th worker is watched: it must reach its loop, then dies 0-5 ms later. The others die
    // 0-30 ms after their start: in exec, the loader, libvgpu's init (region open, slot claim),
    // the context, or the loop.
    if (spawned % 8 == 0) {
      w.kill_at = Clock::time_point::max();
      ++watched;
    } else {
      w.kill_at = w.started + std::chrono::microseconds(rng() % 30000);
    }
    ++spawned;
  };
  const auto t0 = Clock::now();
  for (auto& w : workers) spawn(w);
  while (killed < kills) {
    for (auto& w : workers) {
      if (w.child == nullptr) continue;
      std::string line;
      if (!w.ready && w.child->ReadLineWithin(0, &line)) {
        ASSERT_EQ(line, "ready") << w.child->ReadAllStderr();
        w.ready = true;
        slowest_ready_ms = std::max(slowest_ready_ms, Ms(Clock::now() - w.started));
        if (w.kill_at == Clock::time_point::max()) {
          w.kill_at = Clock::now() + std::chrono::microseconds(rng() % 5000);
        }
      }
      const auto now = Clock::now();
      if (w.kill_at == Clock::time_point::max()) {
        ASSERT_LT(Ms(now - w.started), kReadyTimeoutMs)
            << "process " << w.child->pid() << " never reached its loop (hang?) after " << killed
            << " kills: " << w.child->ReadAllStderr();
        continue;
      }
      if (now < w.kill_at) continue;
      int status = 0;
      if (w.child->WaitWithin(0, &status)) {  // it ended by itself: a failed CHECK in the probe
        FAIL() << "worker exited with status " << status << " after " << killed
               << " kills: " << w.child->ReadAllStdout() << w.child->ReadAllStderr();
      }
      kill(w.child->pid(), SIGKILL);
      ASSERT_TRUE(w.child->WaitWithin(kDeathTimeoutMs, &status)) << "pid " << w.child->pid();
      ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
      ++killed;
      killed_before_ready += w.ready ? 0 : 1;
      w.child.reset();
      if (spawned < kills) spawn(w);
      if (killed % 250 == 0) {  // the survivors are never blocked by what the dead left
        EXPECT_EQ(Ping(a).rfind("alive ", 0), 0u);
        EXPECT_EQ(Ping(b).rfind("alive ", 0), 0u);
      }
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  const double storm_s = Ms(Clock::now() - t0) / 1000;
  std::printf(
      "storm: %d SIGKILLs (%d before the process was ready, %d watched to readiness) with %d in "
      "parallel in %.1f s; slowest start to ready %.0f ms\n",
      killed, killed_before_ready, watched, parallel, storm_s, slowest_ready_ms);

  // Nobody has reaped the last victims yet: the survivors' answer may still count them.
  // A fresh process reaps at its start and sees exactly the survivors' 8 MiB.
  RunResult r = RunProcess({VGPU_PROBE, "usage"}, env);
  ASSERT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) << Describe(r);
  EXPECT_NE(r.out.find("used " + std::to_string(held) + " slots 3"), std::string::npos) << r.out;
  const RegionView v = ReadRegion();
  EXPECT_EQ(v.total, held);
  EXPECT_EQ(v.slot_sum, held);
  // The survivors, and the usage probe's slot (it exited holding nothing; an exit leaves its slot
  // to the next process that looks, after the driver has freed the memory).
  EXPECT_EQ(v.pids.size(), 3u);
  int survivors = 0;
  for (int pid : v.pids) survivors += pid == a.pid() || pid == b.pid();
  EXPECT_EQ(survivors, 2);
  // The survivors' own view (region total and NVML's used memory, after their 1 MiB is freed).
  for (Child* c : {&a, &b}) {
    EXPECT_EQ(Ping(*c), "alive " + std::to_string(held) + " nvml " + std::to_string(held));
  }

  // A fresh process: from exec to its first allocation, and libvgpu's part (cuInit to the alloc).
  Env timed = env;
  timed["PROBE_T0_NS"] = std::to_string(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
          .count());
  r = RunProcess({VGPU_PROBE, "init"}, timed);
  ASSERT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) << Describe(r);
  std::smatch m;
  const std::regex re("init_ns (\\d+) exec_ns (\\d+)");
  ASSERT_TRUE(std::regex_search(r.out, m, re)) << r.out;
  const double init_ms = std::stod(m[1]) / 1e6;
  const double exec_ms = std::stod(m[2]) / 1e6;
  std::printf(
      "fresh process after the storm: cuInit to first alloc %.1f ms, exec to alloc %.1f ms\n",
      init_ms, exec_ms);
  EXPECT_LT(exec_ms, 1000.0);

  for (Child* c : {&a, &b}) {
    c->CloseStdin();
    int status = 0;
    ASSERT_TRUE(c->WaitWithin(kDeathTimeoutMs, &status));
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
  // The survivors' slots are given back once they are gone: the next process reaps them.
  r = RunProcess({VGPU_PROBE, "usage"}, env);
  EXPECT_NE(r.out.find("used 0 slots 1"), std::string::npos) << Describe(r);
}

}  // namespace
