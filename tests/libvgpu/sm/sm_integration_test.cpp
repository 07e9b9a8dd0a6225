// The SM limiter end to end, without a GPU: tenant processes (tests/libvgpu/support/sm_tenant.c)
// started the way a pod starts them — libvgpu.so preloaded, the fake driver and the fake CUPTI on
// the library path, HAMi's environment — share one simulated GPU that time-slices their contexts
// like a real one (docs/fake-driver.md). Each tenant reports the GPU time its kernels got inside a
// common window (its own count, the ground truth), and the test checks it against the limits.
// The simulated GPU has no clock boost, so most cases run the short rhythm everywhere
// (VGPU_SM_ALONE_PAUSE_MS=0); three cases check which tenants alone run its long stretches.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "../process_runner.h"

namespace vgpu::testing {
namespace {

namespace fs = std::filesystem;
using Env = std::map<std::string, std::string>;

int64_t NowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

struct Tenant {
  int limit = 0;                // 0: no limit
  std::string container = "a";  // tenants of one container share its region
  int kernel_us = 1500;         // not a divisor of the fake GPU's 2 ms slice: kernels get preempted
  int sync_every = 4;
  int gap_us = 0;        // host time between launches (a host-bound loop)
  double gap_for_s = 0;  // > 0: the gaps end this long after the start (the loop saturates)
  std::string policy = "force";
  Env extra;
};

struct Outcome {
  double share = 0;          // percent of the window the tenant's kernels ran
  double own_launches = -1;  // launches the tenant counted itself (-1: not reported)
  std::string stats;
  std::string out;
  std::string err;
};

// The value of `key=` in a tenant's output or stats line: what follows it up to the next space or
// line end; "" when the key is not there (a key counts only at the start of a line or word).
std::string ValueOf(const std::string& text, const std::string& key) {
  const std::string tag = key + "=";
  for (size_t at = text.find(tag); at != std::string::npos; at = text.find(tag, at + 1)) {
    if (at != 0 && text[at - 1] != ' ' && text[at - 1] != '\n') continue;
    const size_t from = at + tag.size();
    return text.substr(from, text.find_first_of(" \n", from) - from);
  }
  return "";
}

class SmLimitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/vgpu-sm-it.XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override { fs::remove_all(dir_); }

  Env EnvFor(const Tenant& t, int64_t spawn, int64_t start, int64_t end) const {
    Env env{{"LD_PRELOAD", VGPU_LIBVGPU_SO},
            {"LD_LIBRARY_PATH", VGPU_FAKE_DIR},
            {"VGPU_FAKE_STATE_DIR", dir_ + "/gpu"},
            {"VGPU_FAKE_CONTEXT_MEMORY", "0"},
            {"VGPU_FAKE_MODULE_MEMORY", "0"},
            {"CUDA_DEVICE_MEMORY_SHARED_CACHE", dir_ + "/" + t.container + ".cache"},
            {"VGPU_SM_PEER_DIR", dir_ + "/vgpulock"},
            {"VGPU_SM_ALONE_PAUSE_MS", "0"},
            {"VGPU_SM_STATS", "1"},
            {"TENANT_KERNEL_US", std::to_string(t.kernel_us)},
            {"TENANT_SYNC_EVERY", std::to_string(t.sync_every)},
            {"TENANT_GAP_US", std::to_string(t.gap_us)},
            {"TENANT_START_NS", std::to_string(start)},
            {"TENANT_END_NS", std::to_string(end)}};
    if (t.gap_for_s > 0)
      env["TENANT_GAP_UNTIL_NS"] = std::to_string(spawn + static_cast<int64_t>(t.gap_for_s * 1e9));
    if (t.limit > 0) {
      env["CUDA_DEVICE_SM_LIMIT"] = std::to_string(t.limit);
      env["GPU_CORE_UTILIZATION_POLICY"] = t.policy;
    }
    for (const auto& [k, v] : t.extra) env[k] = v;
    return env;
  }

  // Runs the tenants side by side: a warm-up of `warmup_s`, then a window of `window_s` seconds.
  std::vector<Outcome> RunTogether(const std::vector<Tenant>& tenants, double window_s = 3.0,
                                   double warmup_s = 1.0) {
    const int64_t spawn = NowNs();
    const int64_t start = spawn + static_cast<int64_t>(warmup_s * 1e9);
    const int64_t end = start + static_cast<int64_t>(window_s * 1e9);
    std::vector<std::unique_ptr<Child>> children;
    children.reserve(tenants.size());
    for (const Tenant& t : tenants)
      children.push_back(std::make_unique<Child>(std::vector<std::string>{VGPU_SM_TENANT},
                                                 EnvFor(t, spawn, start, end), false));
    std::vector<Outcome> outcomes;
    for (auto& child : children) {
      Outcome o;
      const std::string out = o.out = child->ReadAllStdout();
      o.err = child->ReadAllStderr();
      const int status = child->Wait();
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out << o.err;
      const std::string work = ValueOf(out, "work_ns");
      const std::string window = ValueOf(out, "window_ns");
      if (!work.empty() && !window.empty()) {
        o.share = 100.0 * std::stod(work) / std::stod(window);
      } else {
        ADD_FAILURE() << "no result: " << out << o.err;
      }
      if (const std::string launches = ValueOf(out, "launches"); !launches.empty())
        o.own_launches = std::stod(launches);
      const size_t stats = o.err.find("[vgpu sm-limit] pid=");
      if (stats != std::string::npos)
        o.stats = o.err.substr(stats, o.err.find('\n', stats) - stats);
      outcomes.push_back(o);
    }
    return outcomes;
  }

  static double Stat(const Outcome& o, const std::string& key) {
    const std::string value = ValueOf(o.stats, key);
    return value.empty() ? -1 : std::stod(value);
  }

  std::string dir_;
};

std::string Describe(const std::vector<Outcome>& outcomes) {
  std::string s;
  for (const Outcome& o : outcomes) s += std::to_string(o.share) + "% " + o.stats + "\n";
  return s;
}

// How many of the tenant's threads bore `name` at the end of its loop (its threads= line).
int ThreadsNamed(const Outcome& o, const std::string& name) {
  const std::string names = ValueOf(o.out, "threads");
  if (names.empty()) return -1;
  const std::string list = "," + names + ",";
  int n = 0;
  for (size_t p = list.find("," + name + ","); p != std::string::npos;
       p = list.find("," + name + ",", p + 1))
    ++n;
  return n;
}

// A saturating tenant alone gets its limit, measured with kernel records. libvgpu's measuring
// thread and CUPTI's worker, which it starts, each go by their own name.
TEST_F(SmLimitTest, SaturatingTenantAloneGetsItsLimit) {
  for (int limit : {10, 30, 50, 70, 90}) {
    const auto r = RunTogether({Tenant{.limit = limit}});
    EXPECT_NEAR(r[0].share, limit, 3.0) << limit << "\n" << Describe(r);
    EXPECT_NE(r[0].stats.find("measure=records"), std::string::npos) << Describe(r);
    EXPECT_EQ(ThreadsNamed(r[0], "vgpu-sm"), 1) << r[0].out;
    EXPECT_EQ(ThreadsNamed(r[0], "vgpu-cupti"), 1) << r[0].out;
  }
}

// A process that sees one device does not ask the driver for each launch's device; with two it
// does. Either way a launch and a synchronisation without a current context are the driver's to
// refuse, the refused launch is not counted, and the limit holds.
TEST_F(SmLimitTest, ALaunchWithoutAContextIsRefusedAndNotCounted) {
  for (const char* gpus : {"1", "2"}) {
    const auto r = RunTogether(
        {Tenant{.limit = 30, .extra = {{"TENANT_CONTEXTLESS", "1"}, {"VGPU_FAKE_GPUS", gpus}}}});
    EXPECT_NEAR(r[0].share, 30, 3.0) << gpus << "\n" << Describe(r);
    const std::string results = ValueOf(r[0].out, "contextless");
    ASSERT_FALSE(results.empty()) << r[0].out;
    EXPECT_EQ(results, "201,201") << "CUDA_ERROR_INVALID_CONTEXT expected: " << r[0].out;
    ASSERT_GE(r[0].own_launches, 0) << r[0].out;
    EXPECT_EQ(Stat(r[0], "launches"), r[0].own_launches) << r[0].out << r[0].stats;
  }
}

// Two and four saturating tenants of different containers: each gets its limit (the GPU is
// time-sliced between them; their kernels' records overlap and are split).
TEST_F(SmLimitTest, SaturatingTenantsShareTheGpuByTheirLimits) {
  auto r =
      RunTogether({Tenant{.limit = 30, .container = "a"}, Tenant{.limit = 70, .container = "b"}});
  EXPECT_NEAR(r[0].share, 30, 3.0) << Describe(r);
  EXPECT_NEAR(r[1].share, 70, 4.0) << Describe(r);
  EXPECT_GT(Stat(r[1], "shared_ms"), 0) << Describe(r);
  r = RunTogether({Tenant{.limit = 10, .container = "a"}, Tenant{.limit = 20, .container = "b"},
                   Tenant{.limit = 30, .container = "c"}, Tenant{.limit = 35, .container = "d"}});
  const int limits[] = {10, 20, 30, 35};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(r[i].share, limits[i], 3.0) << i << "\n" << Describe(r);
}

// Tenants that mostly wait for the GPU take turns (turns.h) rather than run side by side: on a GPU
// whose context switches cost time (150 µs each, as measured on an H100) limits that add up to 100
// are still met. Host-bound tenants never take turns: their kernels overlap the others' host time.
TEST_F(SmLimitTest, GpuBoundTenantsTakeTurns) {
  const Env switching{{"VGPU_FAKE_SWITCH_US", "150"}};
  auto r = RunTogether({Tenant{.limit = 30, .container = "a", .extra = switching},
                        Tenant{.limit = 70, .container = "b", .extra = switching}});
  EXPECT_NEAR(r[0].share, 30, 3.0) << Describe(r);
  EXPECT_NEAR(r[1].share, 70, 4.0) << Describe(r);  // as for the pair above (68.0 seen in CI)
  // Turns were taken. Which tenant's waits count as turn waits is timing: a wait that began in
  // debt counts as a budget wait even when the turn decided its end, and a tenant that spends its
  // whole window's budget in its window (30 ms of every 100 at 30 %) may never wait otherwise.
  EXPECT_GT(Stat(r[0], "turn_waits") + Stat(r[1], "turn_waits"), 0) << Describe(r);
  // Two host-bound loops (a third of their time on the GPU each, less on a loaded host): no turns,
  // both keep running.
  const Tenant loop{.kernel_us = 150, .sync_every = 16, .gap_us = 300, .extra = switching};
  Tenant a = loop;
  a.limit = 50;
  a.container = "a";
  Tenant b = loop;
  b.limit = 50;
  b.container = "b";
  r = RunTogether({a, b});
  EXPECT_EQ(Stat(r[0], "turn_waits"), 0) << Describe(r);
  EXPECT_EQ(Stat(r[1], "turn_waits"), 0) << Describe(r);
  EXPECT_GT(r[0].share, 10) << Describe(r);
  EXPECT_GT(r[1].share, 10) << Describe(r);
}

// An unlimited tenant takes what a limited one leaves: the GPU stays busy (work-conserving). It
// measures nothing, so the limited tenant is charged the slices it lost to it: it gets at most its
// limit, never more.
TEST_F(SmLimitTest, WhatALimitedTenantLeavesGoesToTheOthers) {
  const auto r = RunTogether({Tenant{.limit = 30, .container = "a"}, Tenant{.container = "b"}});
  EXPECT_LE(r[0].share, 33) << Describe(r);
  EXPECT_GT(r[0].share, 10) << Describe(r);
  EXPECT_GT(r[0].share + r[1].share, 90) << Describe(r);
}

// A host-bound loop (as much host time as GPU time between launches) is charged its kernels'
// time, not the gaps: at 30 % it keeps 30 % of the GPU, i.e. ~60 % of its own native speed.
TEST_F(SmLimitTest, HostBoundTenantIsChargedItsKernelsNotItsGaps) {
  const Tenant host_bound{.kernel_us = 300, .sync_every = 1, .gap_us = 150};
  const auto native = RunTogether({host_bound});
  Tenant limited = host_bound;
  limited.limit = 30;
  const auto r = RunTogether({limited});
  // Natively ~60 % of the GPU, less on a loaded 2-core machine (42 % beside another test): the
  // limit must bind by a margin for the check below to mean anything.
  EXPECT_GT(native[0].share, 36) << Describe(native);
  EXPECT_NEAR(r[0].share, 30, 3.0) << Describe(r);
  // Measured with events instead (no CUPTI), its gaps count too: it gets less, never more.
  limited.extra = {{"VGPU_CUPTI_LIBRARY", "off"}};
  const auto events = RunTogether({limited});
  EXPECT_LE(events[0].share, 33) << Describe(events);
  EXPECT_NE(events[0].stats.find("measure=events"), std::string::npos) << Describe(events);
  EXPECT_NE(events[0].err.find("kernel records unavailable"), std::string::npos) << events[0].err;
}

// A host-bound loop of short kernels launched less than 100 µs apart: CUDA events see one busy
// interval (the GPU's gaps between its kernels included), kernel records see ~half of it. Its
// limit is held by the records; a limit that does not bind leaves it alone, measured by events
// scaled with the records of short calibration windows (sampled mode), so it pays little for them.
TEST_F(SmLimitTest, HostBoundLoopWhoseEventsOverstateItIsHeldByRecords) {
  const Tenant loop{.kernel_us = 40, .sync_every = 16, .gap_us = 60};
  const auto native = RunTogether({loop});
  Tenant limited = loop;
  limited.limit = 20;
  const auto held = RunTogether({limited});
  limited.limit = 99;  // records come on from 75 % of the limit: well above the loop's ~50 %
  // Measured once CUPTI is detached (~3.3 s in: records until the first calibration, detached 3 s
  // later): what the sampled mode costs, not what CUPTI attached costs the fake's 2 cores.
  const auto free = RunTogether({limited}, 3.0, 4.0);
  // Natively 35–50 % of the GPU on a 2-core machine, depending on its load; events see ~100 %.
  EXPECT_GT(native[0].share, 28) << Describe(native);
  EXPECT_NEAR(held[0].share, 20, 3.0) << Describe(held);
  EXPECT_GT(free[0].share, native[0].share - 5) << Describe(free);
  EXPECT_NE(free[0].stats.find("measure=sampled"), std::string::npos) << Describe(free);
  EXPECT_LT(Stat(free[0], "attached_ms"), 4000) << Describe(free);
}

// CUPTI attached costs every launch host time even with its records off, so a tenant far below
// its limit measures with events scaled by rare calibration windows, CUPTI detached between them.
// When its work changes (here the host gaps of the loop above end: it saturates the GPU, and its
// events still say ~100 % while its kernels' share of them doubles) a window comes soon, records
// come back as the limit binds, and the limit holds again.
TEST_F(SmLimitTest, CuptiIsDetachedFarBelowTheLimitAndTheLimitHoldsWhenTheWorkChanges) {
  // ~50 % of the GPU until 6 s (far below 80: under 75 % of it), saturating from then on, measured
  // from 12 s.
  Tenant t{.limit = 80, .kernel_us = 40, .sync_every = 16, .gap_us = 80, .gap_for_s = 6.0};
  const auto r = RunTogether({t}, 3.0, 12.0);
  EXPECT_NEAR(r[0].share, 80, 3.0) << Describe(r);
  // Attached at the start (records until the first calibration), detached after ~4 s, attached
  // again for windows (one is due within 5 s of the change) and while the limit binds.
  EXPECT_GE(Stat(r[0], "attaches"), 2) << Describe(r);
  EXPECT_LT(Stat(r[0], "attached_ms"), 15000 - 2000) << Describe(r);
  // Far below its limit all along (no change of work; ~60 % of the GPU): attached once, detached
  // for the rest. Two threads launch each batch onto one stream, as PyTorch's main and autograd
  // threads launch a step's forward and backward passes.
  t.gap_for_s = 0;
  t.gap_us = 60;
  t.limit = 90;
  t.extra = {{"TENANT_SECOND_THREAD", "1"}};
  const auto far = RunTogether({t}, 3.0, 6.0);
  EXPECT_EQ(Stat(far[0], "attaches"), 1) << Describe(far);
  EXPECT_LT(Stat(far[0], "attached_ms"), 6000) << Describe(far);
  EXPECT_NE(far[0].stats.find("measure=sampled"), std::string::npos) << Describe(far);
  // Detached far below its limit, its launches coast (limiter.h Coast): from ~4 s on, 14 of each
  // sync's 16 pass unchecked; every launch is still counted.
  EXPECT_GT(Stat(far[0], "coasted"), 0.25 * Stat(far[0], "launches")) << Describe(far);
  ASSERT_GE(far[0].own_launches, 0) << far[0].out;
  EXPECT_EQ(Stat(far[0], "launches"), far[0].own_launches) << Describe(far);
  // What coasting skips errs towards charging more: the tenant is charged its kernels' time, less
  // at most the sampled mode's margin (calibration.h kScaleMargin). (This loop, one or two threads:
  // 0.95-1.02 of it, with and without coasting.)
  EXPECT_GT(Stat(far[0], "charged_ms"), 0.8 * far[0].own_launches * t.kernel_us / 1000.0)
      << Describe(far);
  // An application subscribed to CUPTI's callbacks (a tool): detaching would end its
  // subscription, so CUPTI stays attached.
  t.extra = {{"TENANT_SUBSCRIBE", "1"}};
  const auto subscribed = RunTogether({t}, 3.0, 6.0);
  EXPECT_EQ(Stat(subscribed[0], "attaches"), 1) << Describe(subscribed);
  EXPECT_GT(Stat(subscribed[0], "attached_ms"), 6000) << Describe(subscribed);
  // Detached, the measuring thread passes every 8 ms instead of 2: over the same run it passed
  // ~60 % as often as the one kept attached (a quarter as often from ~4 s on).
  EXPECT_GT(Stat(far[0], "passes"), 0) << Describe(far);
  EXPECT_LT(Stat(far[0], "passes"), 0.8 * Stat(subscribed[0], "passes"))
      << Describe(far) << Describe(subscribed);
}

// A process that sets up for 5 s (a framework initialising its model: a short kernel every 20 ms,
// no synchronisation) before its loop (~44 % of the GPU) at a limit of 30. Its setup's kernels
// are a sliver of what its events measure. When one 250-ms period of that sliver (0.06 ms of
// kernels in 44 ms of events) set the sampled mode's scale, CUPTI was detached during the setup
// and the loop ran at 38 % until a window 5 s into it (as a PyTorch training loop did on an H200,
// at 43 %, 2026-11-29). Now records mode waits for enough kernels to take a scale from. Heavier
// setup kernels (200 µs) give enough, CUPTI is detached in the setup, and the loop is caught by
// its launches (charged at the setup's kernel time per launch) and by the window its change of
// work opens at once.
TEST_F(SmLimitTest, AScaleTakenInTheSetupDoesNotLetTheLoopAfterItExceedItsLimit) {
  for (const char* setup_kernel_us : {"5", "200"}) {
    Tenant t{.limit = 30, .kernel_us = 40, .sync_every = 16, .gap_us = 50};
    t.extra = {{"TENANT_SETUP_MS", "5000"}, {"TENANT_SETUP_KERNEL_US", setup_kernel_us}};
    const auto r = RunTogether({t}, 6.0, 6.0);
    EXPECT_NEAR(r[0].share, 30, 3.0) << setup_kernel_us << " us: " << Describe(r);
  }
}

// A tenant that works in bursts (300 ms of the loop above, then 1.7 s of pause, as a service
// between requests or processes taking turns do) far below its limit. Its calibration windows come
// every 10 s of its launching time, not of wall time (it launches, counting the 300 ms before its
// measuring thread sleeps, ~30 % of the time): none in this run, only the attach at its start.
// Spaced in wall time, a window came after ~13 s (2 attaches); when the first pass after a pause
// counted in the work's signature, steady bursts looked like changed work and windows came every
// 5 s.
TEST_F(SmLimitTest, CalibrationWindowsOfABurstyTenantFollowItsLaunchingTime) {
  Tenant t{.limit = 90, .kernel_us = 40, .sync_every = 16, .gap_us = 60};
  t.extra = {{"TENANT_BURST_MS", "300"}, {"TENANT_PAUSE_MS", "1700"}};
  const auto r = RunTogether({t}, 28.0, 1.0);
  EXPECT_NE(r[0].stats.find("measure=sampled"), std::string::npos) << Describe(r);
  EXPECT_EQ(Stat(r[0], "attaches"), 1) << Describe(r);
  EXPECT_EQ(Stat(r[0], "moved"), 0) << Describe(r);
}

// The processes of one container share its budget; a process killed in the middle of its budget
// leaves nothing behind: the survivor keeps the container's limit, a new process starts at once.
TEST_F(SmLimitTest, ContainerOfSeveralProcessesSurvivesASigkill) {
  const int64_t start = NowNs() + 500'000'000;
  const int64_t end = start + 3'000'000'000;
  Tenant t{.limit = 40, .container = "c"};
  Child victim({VGPU_SM_TENANT}, EnvFor(t, NowNs(), start, end), false);
  const auto r = RunTogether({t}, 2.0);  // starts while the victim runs
  kill(victim.pid(), SIGKILL);
  victim.Wait();
  EXPECT_LE(r[0].share, 43) << Describe(r);
  const int64_t before = NowNs();
  const auto after = RunTogether({t}, 1.0);
  EXPECT_LT(NowNs() - before, 4'000'000'000);  // the warm-up second plus the window
  EXPECT_NEAR(after[0].share, 40, 4.0) << Describe(after);
}

// Policy `disable` and a limit of 100 leave a tenant unlimited: nothing is measured.
TEST_F(SmLimitTest, DisabledOrFullLimitsAreUnlimited) {
  const auto base = RunTogether({Tenant{}});
  auto r = RunTogether({Tenant{.limit = 30, .policy = "disable"}});
  EXPECT_GT(r[0].share, base[0].share - 5) << Describe(r);
  EXPECT_EQ(r[0].stats, "") << Describe(r);
  r = RunTogether({Tenant{.limit = 100}});
  EXPECT_GT(r[0].share, base[0].share - 5) << Describe(r);
}

// VGPU_SHARING_MODE=mps: MPS partitions the SMs, so libvgpu must not throttle as well (the share
// would be charged twice): a saturating tenant at 30 whose pipe directory has a daemon (here a
// listening socket) runs as one without a limit. Fail closed otherwise: without a daemon CUDA runs
// the process outside MPS with every SM, and a mode libvgpu does not know is a typo; both keep the
// time-slice limit. The fake GPU does not partition SMs.
TEST_F(SmLimitTest, MpsModeIsNotThrottledOnlyWhereADaemonAnswers) {
  const std::string pipe = dir_ + "/mps-pipe";
  ASSERT_EQ(::mkdir(pipe.c_str(), 0700), 0);
  const int daemon = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(daemon, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/control", pipe.c_str()),
            static_cast<int>(sizeof(addr.sun_path)));
  ASSERT_EQ(::bind(daemon, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(daemon, 64), 0);

  const auto base = RunTogether({Tenant{}});
  auto r = RunTogether({Tenant{
      .limit = 30, .extra = {{"VGPU_SHARING_MODE", "mps"}, {"CUDA_MPS_PIPE_DIRECTORY", pipe}}}});
  EXPECT_GT(r[0].share, base[0].share - 5) << Describe(r);
  EXPECT_EQ(r[0].stats, "") << Describe(r);
  ::close(daemon);

  r = RunTogether({Tenant{
      .limit = 30,
      .extra = {{"VGPU_SHARING_MODE", "mps"}, {"CUDA_MPS_PIPE_DIRECTORY", dir_ + "/no-daemon"}}}});
  EXPECT_NEAR(r[0].share, 30, 3.0) << Describe(r);
  EXPECT_NE(r[0].err.find("no MPS control daemon answers"), std::string::npos) << r[0].err;
  r = RunTogether({Tenant{.limit = 30, .extra = {{"VGPU_SHARING_MODE", "mps-please"}}}});
  EXPECT_NEAR(r[0].share, 30, 3.0) << Describe(r);
  EXPECT_NE(r[0].err.find("invalid VGPU_SHARING_MODE"), std::string::npos) << r[0].err;
}

// A saturating tenant alone runs long stretches between long pauses (for the GPU's clock boost);
// beside another tenant its waits are short.
TEST_F(SmLimitTest, LongStretchesOnlyForASaturatingTenantAlone) {
  Tenant alone{.limit = 50, .extra = {{"VGPU_SM_ALONE_PAUSE_MS", "1000"}}};
  auto r = RunTogether({alone}, 4.0);
  EXPECT_GE(Stat(r[0], "max_wait_ms"), 400) << Describe(r);
  EXPECT_GT(Stat(r[0], "pauses"), 0) << Describe(r);
  Tenant other{.limit = 40, .container = "b"};
  r = RunTogether({alone, other}, 3.0);
  EXPECT_LT(Stat(r[0], "max_wait_ms"), 100) << Describe(r);
  EXPECT_EQ(Stat(r[0], "pauses"), 0) << Describe(r);
}

// With the default pause (100 ms), a saturating tenant alone at 50 settles into the alone rhythm
// (~5 waits a second, each >= 100 ms) within its first half second and stays there: its kernels
// cover ~0.98 of its free time here (~0.99 for a matmul loop on an H200), over the 0.95 that marks
// a saturating tenant.
TEST_F(SmLimitTest, ASaturatingTenantAloneKeepsTheLongStretches) {
  Tenant alone{.limit = 50, .extra = {{"VGPU_SM_ALONE_PAUSE_MS", "100"}}};
  const auto r = RunTogether({alone}, 3.0);
  EXPECT_NEAR(r[0].share, 50, 5.0) << Describe(r);
  EXPECT_GE(Stat(r[0], "max_wait_ms"), 100) << Describe(r);
  EXPECT_LT(Stat(r[0], "waits"), 100) << Describe(r);
}

// A back-to-back request loop alone whose GPU idles for its host time between requests (three
// 2-ms kernels, then 1 ms of host time: its kernels cover ~0.88 of its free time) is not a
// saturating tenant: it keeps the short rhythm's waits, never the alone rhythm's pause. (An
// encoder served back to back on an H200 kept the GPU 87-92 % busy; a pause met by 1 request in 7
// made its p99 request time 130-140 ms instead of ~41.) Which rhythm a wait was in is counted
// (`pauses`), not told from its length: a loaded machine stretched a short-rhythm wait to 125.7 ms
// in one clean-clone run on 2 cores and to 424 ms in one CI run, both with `pauses` unknown then.
TEST_F(SmLimitTest, ARequestLoopAloneIsNotASaturatingTenant) {
  Tenant loop{.limit = 30,
              .kernel_us = 2000,
              .sync_every = 3,
              .gap_us = 1000,
              .extra = {{"VGPU_SM_ALONE_PAUSE_MS", "400"}}};
  const auto r = RunTogether({loop}, 3.0);
  EXPECT_NEAR(r[0].share, 30, 3.0) << Describe(r);
  EXPECT_GT(Stat(r[0], "waits"), 0) << Describe(r);
  EXPECT_EQ(Stat(r[0], "pauses"), 0) << Describe(r);
}

// A back-to-back request loop alone (three 2-ms kernels and a synchronisation: 6-ms requests) at
// 30, in the short rhythm: it sees its debt only once its work is charged, then waits it out, so
// its slowest requests wait about (how late its records are charged) x 100 / 30. Alone, nothing
// is split and records are charged as they arrive; held 8 ms for the split, as beside other
// tenants, its requests' p99 read 75.7 ms here (47.9 ms now).
TEST_F(SmLimitTest, ARequestLoopAloneIsChargedAsItsRecordsArrive) {
  const auto r = RunTogether({Tenant{.limit = 30, .kernel_us = 2000, .sync_every = 3}});
  EXPECT_NEAR(r[0].share, 30, 3.0) << Describe(r);
  EXPECT_NE(r[0].stats.find("measure=records"), std::string::npos) << Describe(r);
  const std::string p99_us = ValueOf(r[0].out, "batch_p99_us");
  ASSERT_FALSE(p99_us.empty()) << r[0].out;
  EXPECT_LT(std::stod(p99_us) / 1000.0, 60.0) << r[0].out << Describe(r);
}

// An application that takes CUPTI's activity API itself (a profiler) stops the limiter's kernel
// records: it says so in one line, measures with events from then on, and the limit still holds.
TEST_F(SmLimitTest, AnApplicationTakingCuptiIsToldAndTheLimitHolds) {
  Tenant t{.limit = 30, .extra = {{"TENANT_PROFILER", "1"}}};
  const auto r = RunTogether({t});
  EXPECT_NE(r[0].err.find("the application called cuptiActivityRegisterCallbacks"),
            std::string::npos)
      << r[0].err;
  EXPECT_NE(r[0].stats.find("measure=events"), std::string::npos) << Describe(r);
  EXPECT_LE(r[0].share, 33) << Describe(r);
  EXPECT_GT(r[0].share, 20) << Describe(r);
}

// CUPTI that takes the kernel kind and hands nothing back (the fake's first attachment is silent,
// or every one; seen once on an H200): in records mode such a tenant was charged nothing and ran
// unlimited. After 2 s of launching without a buffer CUPTI is attached again; at the second
// silence it is given up for events, with a warning. The limit holds both ways.
TEST_F(SmLimitTest, CuptiThatHandsNothingBackIsAttachedAgainThenGivenUp) {
  Tenant once{.limit = 30,
              .container = "a",
              .extra = {{"VGPU_FAKE_CUPTI_SILENT_ATTACHES", "1"}, {"VGPU_SM_STATS", "2"}}};
  Tenant always{
      .limit = 20, .container = "b", .extra = {{"VGPU_FAKE_CUPTI_SILENT_ATTACHES", "1000"}}};
  const auto r = RunTogether({once, always}, 3.0, 5.0);
  EXPECT_EQ(r[0].err.find("handed none back"), std::string::npos) << r[0].err;
  // VGPU_SM_STATS=2 traced the silence and the attach that followed it.
  EXPECT_NE(r[0].err.find("[vgpu sm-trace]"), std::string::npos) << r[0].err;
  EXPECT_NE(r[0].err.find("(silence 1)"), std::string::npos) << r[0].err;
  EXPECT_NE(r[0].err.find("CUPTI attached", r[0].err.find("(silence 1)")), std::string::npos)
      << r[0].err;
  EXPECT_GE(Stat(r[0], "attaches"), 2) << Describe(r);
  EXPECT_GT(Stat(r[0], "records"), 0) << Describe(r);
  EXPECT_NE(r[1].err.find("CUPTI took the kernel records and handed none back"), std::string::npos)
      << r[1].err;
  EXPECT_NE(r[1].stats.find("measure=events"), std::string::npos) << Describe(r);
  EXPECT_LE(r[0].share, 33) << Describe(r);
  EXPECT_GT(r[0].share, 20) << Describe(r);
  EXPECT_LE(r[1].share, 23) << Describe(r);
  EXPECT_GT(r[1].share, 5) << Describe(r);
}

// Without the lock directory (a plain LD_PRELOAD run), it is created: tenants still see each other
// (their overlapping records are split: shared_ms) and the GPU is split by their limits. Tenants
// that did not see each other drifted to 20.6 + 64.3 on an H100 (a split of 24 : 76). The split of
// what was delivered is checked, not each share alone: on a loaded 2-core CI box the turn-taking
// fake GPU delivered 82-94 % in some runs (23.6 + 58.4, a split of 29 : 71).
TEST_F(SmLimitTest, MissingLockDirectoryIsCreated) {
  Tenant a{.limit = 30, .container = "a", .extra = {{"VGPU_SM_PEER_DIR", dir_ + "/new/vgpulock"}}};
  Tenant b{.limit = 70, .container = "b", .extra = a.extra};
  const auto r = RunTogether({a, b});
  EXPECT_TRUE(fs::is_directory(dir_ + "/new/vgpulock"));
  EXPECT_GT(Stat(r[0], "shared_ms"), 0) << Describe(r);
  EXPECT_GT(Stat(r[1], "shared_ms"), 0) << Describe(r);
  EXPECT_LE(r[0].share, 33) << Describe(r);
  EXPECT_LE(r[1].share, 74) << Describe(r);
  const double delivered = r[0].share + r[1].share;
  EXPECT_GT(delivered, 75) << Describe(r);
  EXPECT_NEAR(100 * r[0].share / delivered, 30, 4.0) << Describe(r);
}

}  // namespace
}  // namespace vgpu::testing
