#ifndef VGPU_TESTING_FAKES_FAKE_KERNEL_RECORDS_H_
#define VGPU_TESTING_FAKES_FAKE_KERNEL_RECORDS_H_

/* Fake-only export of the fake libcuda.so.1: the kernels of the calling process that completed on
 * the simulated GPUs, one record per kernel, as a GPU's own trace would give them. The fake
 * libcupti.so.13 builds its activity records from it (it dlsym's the function from the libcuda.so.1
 * already loaded); tests may call it directly. C, so that any client can use it. */

#ifdef __cplusplus
extern "C" {
#endif

#define VGPU_FAKE_RECORD_GPUS 16 /* physical GPUs a cursor follows (the fake's maximum) */

/* Where a reader stands in the record history. Zero it before the first call: that call positions
 * it at "now" (records of kernels completed before are never returned) and returns none. */
typedef struct VgpuFakeKernelCursor {
  unsigned long long started;                         /* 0 until positioned */
  unsigned long long next_seq[VGPU_FAKE_RECORD_GPUS]; /* per physical GPU: next record to read */
  unsigned long long seen[VGPU_FAKE_RECORD_GPUS];     /* per GPU: own kernels accounted for */
  unsigned long long lost; /* own records overwritten before they were taken (cumulative) */
  unsigned int next_correlation_id; /* correlation id the process's next launch will get */
  unsigned int reserved;
} VgpuFakeKernelCursor;

/* One completed kernel. Times are CLOCK_MONOTONIC nanoseconds of the simulated timeline. */
typedef struct VgpuFakeKernelRecord {
  unsigned long long start_ns;   /* when it first ran */
  unsigned long long end_ns;     /* when it completed (after any preemptions) */
  unsigned long long service_ns; /* time it actually ran: its duration */
  unsigned int context_id;       /* process-unique, 1, 2, ... in creation order */
  unsigned int stream_id;        /* process-unique, 1, 2, ... in creation order */
  unsigned int correlation_id;   /* of the launch call (a graph launch: all its kernels) */
  int device;                    /* CUDA device ordinal, as this process numbers devices */
  unsigned int grid[3];
  unsigned int block[3];
} VgpuFakeKernelRecord;

/* Advances every simulated GPU to now, then copies up to `capacity` of this process's kernels that
 * completed since `*cursor` into `records` (per GPU in completion order), sets `*count`, and moves
 * the cursor past them; `capacity` 0 only refreshes `next_correlation_id`. Returns a CUresult
 * (as int, so that this header needs no cuda.h): CUDA_SUCCESS, CUDA_ERROR_NOT_INITIALIZED before
 * cuInit, CUDA_ERROR_INVALID_VALUE for null arguments. */
int vgpuFakeTakeKernelRecords(VgpuFakeKernelCursor* cursor, VgpuFakeKernelRecord* records,
                              unsigned int capacity, unsigned int* count);
typedef int (*VgpuFakeTakeKernelRecordsFn)(VgpuFakeKernelCursor*, VgpuFakeKernelRecord*,
                                           unsigned int, unsigned int*);

#ifdef __cplusplus
}
#endif

#endif /* VGPU_TESTING_FAKES_FAKE_KERNEL_RECORDS_H_ */
