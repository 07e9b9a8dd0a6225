#pragma once

// A simulated GPU for the SM-limiter tests, following the fake-driver execution model
// (docs/fake-driver.md): a kernel runs ns_per_wave × ceil(blocks / SMs) ns, one kernel at a time
// per GPU across processes, in submission order, on CLOCK_MONOTONIC; events capture the stream
// tail. The GPU's state lives in a file mapped by every tenant process, and the GPU itself keeps
// the ground truth the tests assert on: how much GPU time each tenant received inside a window.

#include <cuda.h>
#include <stdint.h>

#include "sm_limit.h"

namespace vgpu::sm::testing {

constexpr int kSimMaxTenants = 16;

struct SimGpuFile {
  int64_t free_at_ns;  // end of the last kernel queued
  int64_t window_start_ns;
  int64_t window_end_ns;
  int32_t sms;
  int32_t reserved;
  int64_t service_ns[kSimMaxTenants];  // GPU time each tenant's kernels got inside the window
};

int64_t SimNowNs();

// Creates (or truncates) the GPU file. Call in the parent before tenants start.
bool SimCreate(const char* path, int32_t sms, int64_t window_start_ns, int64_t window_end_ns);
// Reads the file's contents (after tenants finished).
bool SimRead(const char* path, SimGpuFile* out);

// In a tenant process: maps the GPU and returns a driver table for vgpu_sm_init.
bool SimAttach(const char* path, int tenant, VgpuSmDriver* driver);
// Queues a kernel on `stream` (async); returns CUDA_SUCCESS.
CUresult SimLaunch(CUstream stream, int64_t ns_per_wave, int64_t blocks);
// Sleeps until all of this process's queued work is done (cuStreamSynchronize).
void SimSynchronize(CUstream stream);
// How far ahead of now this stream's queued work reaches.
int64_t SimQueuedAheadNs(CUstream stream);

}  // namespace vgpu::sm::testing
