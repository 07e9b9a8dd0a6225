#pragma once

// Kernel records from CUPTI's activity API (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL): the start and
// end of every kernel the process runs, on CLOCK_MONOTONIC (a timestamp callback makes CUPTI
// convert the GPU's times to it), so that a tenant is charged its own kernel-busy time — not the
// host's gaps between kernels, which CUDA events around batches of launches include.
//
// Measured on an H100 (bench/gpu/cupti_probe.sh, 2026-11-25): records cost ~1.0–1.5 µs of host time
// per launch (an empty-kernel launch went from 3.0–4.0 to 4.5–5.1 µs); a kernel's record reaches
// the buffer callback 0.6–1.8 ms after it ends, on a CUPTI thread; cuptiActivityFlushAll costs
// ~100 µs. A record's start lies 7–60 µs after the host launched onto an idle GPU.
//
// libcupti ships with the CUDA toolkit and the frameworks' wheels, not with the driver: it is
// looked for where the process already loaded it, then VGPU_CUPTI_LIBRARY, the library path and
// the toolkit's folders. The activity API allows one client per process: when the application
// itself registers activity callbacks (a profiler), records stop for us (cupti_guard.cpp tells).
// I/O adapter: dlopen, CUPTI's callbacks (on CUPTI's thread), a mutex-guarded queue.

#include <stdint.h>

namespace vgpu::sm {

struct KernelRecord {
  int32_t device;  // CUDA ordinal in this process
  int64_t start;
  int64_t end;
};

namespace kernel_records {

// Loads libcupti and registers our buffer and timestamp callbacks (once). `configured`: the
// VGPU_CUPTI_LIBRARY value ("" = search, "off" = never). False with `*why` when unusable.
bool Start(const char* configured, const char** why);
// CUPTI attached to the process costs every launch host time even with the kernel kind off (~0.5 µs
// on an H200 host, bench/gpu/cupti_presence.cu, 2026-11-28), so the measuring thread detaches it
// (cuptiFinalize) while records are far from needed. Attaching takes ~7 ms and stalls a launching
// thread 3-6 ms, detaching ~1.5 ms: both are for the measuring thread, and rare. Detach hands
// back every complete record first; it refuses (false) while the application's clock is in use,
// once the application subscribed to CUPTI's callbacks, and when libcupti has no cuptiFinalize.
// Start attaches.
bool Attach();
bool Detach();
bool Attached();
struct AttachStats {
  uint64_t attaches;     // times our callbacks were registered
  uint64_t attached_ns;  // time CUPTI was attached, the current attachment included
};
AttachStats AttachStatistics();
// Turns the kernel kind on (attaching first when detached) or off (process-wide). False when
// CUPTI refused.
bool SetEnabled(bool on);
bool Enabled();
// Hands over every buffer CUPTI holds whose records are complete (cuptiActivityFlushAll(0)).
void Flush();
// The process's recent launch rate (the measuring thread's), which sizes the buffers CUPTI asks for
// from now on (record_buffers.h: what it launches in ~16 ms, from 4 KB to 64 KB).
void SetLaunchRate(double launches_per_s);
// When CUPTI last handed a buffer back (NowNs; 0: never). While buffers fill faster than they
// are flushed, CUPTI hands them back by itself and a flush only costs.
int64_t LastDeliveryNs();
// Moves up to `max` delivered records into `out`; returns how many.
int Drain(KernelRecord* out, int max);
// Records CUPTI or our queue dropped (for the statistics).
uint64_t Dropped();
// Buffers CUPTI handed back so far (the measuring thread watches that they keep coming).
uint64_t Deliveries();
struct BufferStats {
  uint64_t delivered;  // buffers CUPTI handed back
  uint64_t lent;       // buffers CUPTI holds now
  uint64_t unusable;   // kernel records whose end was not after their start (skipped)
};
BufferStats BufferStatistics();

// The application took CUPTI's activity buffers (cuptiActivityRegisterCallbacks) or tore CUPTI
// down (cuptiFinalize): our records stopped. `call` names it for the warning. cupti_guard.cpp.
void MarkTakenByApplication(const char* call);
bool TakenByApplication();
const char* TakenBy();
// The application subscribed to CUPTI's callbacks (cuptiSubscribe): Detach refuses from now on,
// since cuptiFinalize would end the application's subscription.
void KeepAttached();
// The application set CUPTI's clock: records come on it from now on; convert them back.
void ApplicationClock(uint64_t (*clock)());
// The application turned the kernel kind off: turn it on again at the next SetEnabled(true).
void ApplicationDisabledKernels();

// In a fork child: CUPTI's state does not survive fork; never use it there.
void ForgetAfterFork();

}  // namespace kernel_records
}  // namespace vgpu::sm
