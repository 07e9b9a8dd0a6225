// cupti_presence: does CUPTI cost a launch-bound loop when its kernel records are OFF?
// libvgpu's limited path keeps CUPTI's activity API initialized for the whole process (kernel
// records are switched on only in windows, docs/sm-limit.md), while its in-process paired probe
// (tests/libvgpu/support/paired_launch.c) runs both of its paths with CUPTI initialized. This
// times one process's empty-kernel loop (runtime launches, a sync every 200 launches, like the
// PyTorch launch loop of sm_workloads.py `small`) in blocks that cycle through
//   none      CUPTI not attached (before the first attach, and after each cuptiFinalize)
//   disabled  activity callbacks registered, CONCURRENT_KERNEL enabled once and disabled again
//   enabled   CONCURRENT_KERNEL on (records flowing)
// and prints ns per launch per state: median and quartiles over the cycles, and how long attaching
// (register + enable) and detaching (cuptiFinalize) took. With a third argument `stall`: the
// longest launch another thread sees while CUPTI is attached and detached (stall_probe).
//   nvcc -O2 -std=c++17 cupti_presence.cu -lcupti -lcuda -o cupti_presence && ./cupti_presence
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

__global__ void empty() {}

static double now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void CUPTIAPI requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 8 << 20;
  *buffer = static_cast<uint8_t*>(aligned_alloc(8, *size));
  *max_records = 0;
}
static void CUPTIAPI completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t) {
  free(buffer);
}

static void check(CUptiResult r, const char* what) {
  if (r != CUPTI_SUCCESS) {
    const char* s = nullptr;
    cuptiGetResultString(r, &s);
    fprintf(stderr, "%s: %s\n", what, s ? s : "?");
    exit(1);
  }
}

// ns per launch of `launches` launches, synchronising every 200.
static double block(int launches) {
  cudaDeviceSynchronize();
  const double t0 = now_ns();
  for (int i = 1; i <= launches; ++i) {
    empty<<<1, 32>>>();
    if (i % 200 == 0) cudaStreamSynchronize(nullptr);
  }
  cudaDeviceSynchronize();
  return (now_ns() - t0) / launches;
}

static void summary(const char* name, std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  printf("%-9s cycles=%zu median=%.0f q1=%.0f q3=%.0f ns/launch\n", name, n, v[n / 2], v[n / 4],
         v[(3 * n) / 4]);
}

// What an application thread sees while another thread attaches and detaches CUPTI (libvgpu's
// measuring thread would): the longest single launch (or sync every 200) in each 200-ms phase.
static void stall_probe(int cycles) {
  std::atomic<bool> stop{false};
  std::atomic<double> worst{0};
  std::thread app([&] {
    int i = 0;
    while (!stop.load()) {
      const double t0 = now_ns();
      empty<<<1, 32>>>();
      if (++i % 200 == 0) cudaStreamSynchronize(nullptr);
      const double took = now_ns() - t0;
      double w = worst.load();
      while (took > w && !worst.compare_exchange_weak(w, took)) {
      }
    }
  });
  const auto phase = [&](const char* what) {
    worst = 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    return std::make_pair(what, worst.load() / 1e3);
  };
  std::vector<double> quiet, attaching, detaching;
  for (int c = 0; c < cycles; ++c) {
    quiet.push_back(phase("quiet").second);
    worst = 0;
    check(cuptiActivityRegisterCallbacks(requested, completed), "register");
    check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "enable");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    attaching.push_back(worst.load() / 1e3);
    check(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "disable");
    check(cuptiActivityFlushAll(0), "flush");
    worst = 0;
    check(cuptiFinalize(), "finalize");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    detaching.push_back(worst.load() / 1e3);
  }
  stop = true;
  app.join();
  for (auto* v : {&quiet, &attaching, &detaching}) std::sort(v->begin(), v->end());
  printf(
      "stall: longest launch per phase, median / max us: quiet %.0f / %.0f, attach %.0f / %.0f, "
      "detach %.0f / %.0f\n",
      quiet[quiet.size() / 2], quiet.back(), attaching[attaching.size() / 2], attaching.back(),
      detaching[detaching.size() / 2], detaching.back());
}

int main(int argc, char** argv) {
  const int cycles = argc > 1 ? atoi(argv[1]) : 15;
  const int launches = argc > 2 ? atoi(argv[2]) : 40000;
  cudaFree(nullptr);
  if (argc > 3 && std::string(argv[3]) == "stall") {
    stall_probe(cycles);
    return 0;
  }
  block(launches);  // warm-up
  std::vector<double> none, disabled, enabled, none_paired_delta, disabled_paired_delta;
  std::vector<double> attach_us, detach_us;  // what switching CUPTI on and off costs
  for (int c = 0; c < cycles; ++c) {
    const double a = block(launches);
    const double t_attach = now_ns();
    check(cuptiActivityRegisterCallbacks(requested, completed), "register");
    check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "enable");
    attach_us.push_back((now_ns() - t_attach) / 1e3);
    check(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "disable");
    const double b = block(launches);
    check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "enable");
    const double e = block(launches);
    check(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "disable");
    check(cuptiActivityFlushAll(0), "flush");
    const double b2 = block(launches);
    const double t_detach = now_ns();
    check(cuptiFinalize(), "finalize");
    detach_us.push_back((now_ns() - t_detach) / 1e3);
    const double a2 = block(launches);
    none.push_back(a);
    none.push_back(a2);
    disabled.push_back(b);
    disabled.push_back(b2);
    enabled.push_back(e);
    // Paired within the cycle: disabled against the mean of the two none blocks around it.
    disabled_paired_delta.push_back((b + b2) / 2 - (a + a2) / 2);
    none_paired_delta.push_back(a2 - a);
    printf("cycle %d: none %.0f disabled %.0f enabled %.0f disabled %.0f none %.0f\n", c, a, b, e,
           b2, a2);
  }
  summary("none", none);
  summary("disabled", disabled);
  summary("enabled", enabled);
  summary("d-n pair", disabled_paired_delta);
  summary("n-n (A/A)", none_paired_delta);
  std::sort(attach_us.begin(), attach_us.end());
  std::sort(detach_us.begin(), detach_us.end());
  printf(
      "attach (register + enable) median=%.0f max=%.0f us; detach (cuptiFinalize) median=%.0f "
      "max=%.0f us\n",
      attach_us[attach_us.size() / 2], attach_us.back(), detach_us[detach_us.size() / 2],
      detach_us.back());
  return 0;
}
