// The SM limiter's own per-launch cost: vgpu_sm_before_launch + vgpu_sm_after_launch for a
// process whose limit (99 %, policy force) never binds, against a driver whose calls cost nothing
// (so only the limiter's work is timed: clocks, locks, the lease, the accounting). On a real GPU
// the driver's calls add to this (bench/libvgpu/limited_launch_cost.cu measures those).
//
//   build/release/bench/libvgpu/sm_launch_path_bench
#include <benchmark/benchmark.h>

#include <cstddef>
#include <vector>

#include "instant_sm_gpu.h"
#include "sm_limit.h"

namespace {

void InitLimiter() {
  static bool done = false;
  if (done) return;
  done = true;
  vgpu::sm::instant_gpu::InitLimiter(99);
}

void BM_LimitedLaunchPath(benchmark::State& state) {
  InitLimiter();
  auto* stream = reinterpret_cast<CUstream>(0x1000);
  for (auto _ : state) {
    vgpu_sm_before_launch(stream, 0);
    vgpu_sm_after_launch(stream, 0, CUDA_SUCCESS);
  }
}
BENCHMARK(BM_LimitedLaunchPath)->MinTime(2.0);

// An application runs its own code between launches (a Python interpreter: several microseconds
// and a working set far larger than L1), so the limiter's state is rarely still in cache when the
// next launch comes. These two touch `KB` of other memory between launches; the limiter's cost
// with cold caches is the difference between them.
std::vector<char>& Pollution() {
  static std::vector<char> buffer(std::size_t{8} << 20);
  return buffer;
}
void Pollute(std::size_t bytes) {
  std::vector<char>& b = Pollution();
  static std::size_t offset = 0;
  for (std::size_t i = 0; i < bytes; i += 64) {
    b[offset] = static_cast<char>(b[offset] + 1);
    offset = (offset + 64) % b.size();
  }
}
void BM_PolluteOnly(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0)) << 10;
  for (auto _ : state) {
    Pollute(bytes);
    benchmark::ClobberMemory();
  }
}
void BM_LimitedLaunchPathColdCaches(benchmark::State& state) {
  InitLimiter();
  auto* stream = reinterpret_cast<CUstream>(0x1000);
  const auto bytes = static_cast<std::size_t>(state.range(0)) << 10;
  for (auto _ : state) {
    Pollute(bytes);
    benchmark::ClobberMemory();
    vgpu_sm_before_launch(stream, 0);
    vgpu_sm_after_launch(stream, 0, CUDA_SUCCESS);
  }
}
BENCHMARK(BM_PolluteOnly)->Arg(256)->Arg(2048)->MinTime(1.0);
BENCHMARK(BM_LimitedLaunchPathColdCaches)->Arg(256)->Arg(2048)->MinTime(1.0);

}  // namespace

BENCHMARK_MAIN();
