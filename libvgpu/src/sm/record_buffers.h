#pragma once

// How large a buffer CUPTI gets for its kernel records (kernel_records.cpp): pure, table-tested.
//
// CUPTI hands a buffer back only once every record in it is complete: while a stream keeps
// kernels queued, the buffer being filled waits until it is full. A 32 KB buffer (~150 records)
// then arrived up to 2 s late behind a loop of 2 ms kernels on an H100; 4 KB (~18 records) bounds
// that to ~18 kernels. But every buffer handed back wakes CUPTI's thread about four times, and a
// tenant pinned to one core pays for each wake-up. A PyTorch training loop launching ~20 000
// kernels a second, under CUPTI alone (no libvgpu, records on throughout), filled ~950 4-KB
// buffers a second and ran 23.9 and 14.9 steps/s; with 64-KB buffers (~125 a second, one per
// flush) 24.0 and 24.7; a limited process with CUPTI detached most of the time 27.3 and 26.9 (H200,
// 2026-11-29; the journal and run in git: d8b3fc2's docs/gpu-results.md, bench/gpu/runs/). So a
// buffer holds what the process launches in kBufferFillNs at its recent launch rate, from 4 KB to
// 64 KB: a slow launcher of long kernels keeps the 4-KB bound, a fast one of short kernels (whose
// records complete soon) hands a buffer back per flush of the measuring thread (every 8 ms).

#include <stddef.h>
#include <stdint.h>

namespace vgpu::sm {

constexpr size_t kMinRecordBuffer = size_t{4} * 1024;
constexpr size_t kMaxRecordBuffer = size_t{64} * 1024;
constexpr int64_t kBufferFillNs = 16'000'000;  // two of the measuring thread's flush intervals
// A record of the kernel kind takes ~240 bytes in the buffer (17-18 in 4 KB on an H200).
constexpr double kRecordBytes = 240.0;

// The buffer size for a process launching `launches_per_s` kernels a second: whole 4-KB pages.
inline size_t RecordBufferBytes(double launches_per_s) {
  const double want = launches_per_s * static_cast<double>(kBufferFillNs) / 1e9 * kRecordBytes;
  if (!(want > static_cast<double>(kMinRecordBuffer))) return kMinRecordBuffer;  // NaN too
  if (want >= static_cast<double>(kMaxRecordBuffer)) return kMaxRecordBuffer;
  const auto bytes = static_cast<size_t>(want);
  return (bytes + kMinRecordBuffer - 1) / kMinRecordBuffer * kMinRecordBuffer;
}

}  // namespace vgpu::sm
