// One tenant process of the SM-limiter simulations: a saturating loop of kernels on the simulated
// GPU, launched through the limiter's hooks exactly as libvgpu's launch hooks call them, and
// synchronising every few launches like a training loop. Configured by environment variables
// (the limiter's own, plus SIM_*), so that the test driver can start many of them at once.

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "sim_gpu.h"
#include "sm_limit.h"

namespace {

int64_t EnvInt(const char* name, int64_t fallback) {
  const char* text = getenv(name);
  return text != nullptr && *text != '\0' ? strtoll(text, nullptr, 10) : fallback;
}

void SleepNs(int64_t ns) {
  if (ns <= 0) return;
  timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
  nanosleep(&ts, nullptr);
}

}  // namespace

int main() {
  using namespace vgpu::sm::testing;
  const char* gpu = getenv("SIM_GPU_FILE");
  VgpuSmDriver driver{};
  if (gpu == nullptr || !SimAttach(gpu, static_cast<int>(EnvInt("SIM_TENANT", 0)), &driver)) {
    fprintf(stderr, "sm_sim_tenant: cannot attach SIM_GPU_FILE\n");
    return 2;
  }
  vgpu_sm_init(&driver);
  const int64_t start = EnvInt("SIM_START_NS", 0);
  const int64_t deadline = EnvInt("SIM_DEADLINE_NS", SimNowNs() + 1'000'000'000);
  const int64_t ns_per_wave = EnvInt("SIM_NS_PER_WAVE", 2'000'000);
  const int64_t blocks = EnvInt("SIM_BLOCKS", 200);
  const int64_t sync_every = EnvInt("SIM_SYNC_EVERY", 16);
  const int per_thread = static_cast<int>(EnvInt("SIM_PTSZ", 0));
  // Like a real driver's bounded launch queue: a launch blocks when 20 ms of work is queued.
  const int64_t max_queued_ns = 20'000'000;
  CUstream stream = per_thread != 0 ? nullptr : reinterpret_cast<CUstream>(0x1000);
  SleepNs(start - SimNowNs());
  int64_t launches = 0;
  while (SimNowNs() < deadline) {
    vgpu_sm_before_launch(stream, per_thread);
    CUresult result = SimLaunch(stream, ns_per_wave, blocks);
    vgpu_sm_after_launch(stream, per_thread, result);
    ++launches;
    if (sync_every > 0 && launches % sync_every == 0) {
      vgpu_sm_before_sync();  // as libvgpu's synchronisation hooks do
      SimSynchronize(stream);
    }
    int64_t ahead = SimQueuedAheadNs(stream);
    if (ahead > max_queued_ns) SleepNs(ahead - max_queued_ns);
  }
  vgpu_sm_before_sync();
  SimSynchronize(stream);
  VgpuSmStats stats{};
  vgpu_sm_get_stats(0, &stats);
  printf(
      "launches=%lld percent=%d measured_ms=%.1f charged_ms=%.1f throttled_ms=%.1f "
      "lease_wait_ms=%.1f events=%llu budget_waits=%llu fast_launches=%llu\n",
      static_cast<long long>(launches), stats.percent, stats.measured_ns / 1e6,
      stats.charged_ns / 1e6, stats.throttled_ns / 1e6, stats.lease_wait_ns / 1e6,
      static_cast<unsigned long long>(stats.events_recorded),
      static_cast<unsigned long long>(stats.budget_waits),
      static_cast<unsigned long long>(stats.fast_launches));
  return 0;
}
