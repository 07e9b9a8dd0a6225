#pragma once

// In-process state of the fake CUDA driver: handles (contexts, streams, events, modules,
// graphs, pools, arrays), allocations, and the per-thread context stack. Device-wide facts
// shared between processes (used memory, every context's queue of kernels and the GPU's
// timeline) live in SharedState.
//
// Every handle is a pointer to an object owned by a registry; a call validates a handle by
// looking it up, so stale or foreign handles give CUDA_ERROR_INVALID_HANDLE/CONTEXT instead of
// a crash. One mutex guards the whole state; sleeps (synchronize) happen outside it.

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "../fake_config.h"
#include "../shared_state.h"
#include "cuda_api.h"

namespace vgpu::fake {

// Work a kernel launch describes: ns_per_wave x ceil(blocks / SMs), or a fixed 2 us.
struct KernelSpec {
  bool timed = false;
  uint64_t ns_per_wave = 0;
  uint64_t blocks = 1;
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
};
inline constexpr int64_t kDefaultKernelNs = 2000;

KernelSpec MakeKernelSpec(const unsigned (&grid)[3], const unsigned (&block)[3], void** params);
int64_t KernelDurationNs(const KernelSpec& spec, int sms);

}  // namespace vgpu::fake

struct CUgraphNode_st {
  enum class Kind { kKernel, kMemAlloc, kMemFree } kind = Kind::kKernel;
  vgpu::fake::KernelSpec kernel;
  uint64_t bytes = 0;    // kMemAlloc
  int physical = 0;      // kMemAlloc
  CUdeviceptr dptr = 0;  // kMemAlloc (assigned at creation) and kMemFree
};

struct CUgraph_st {
  std::vector<std::unique_ptr<CUgraphNode_st>> nodes;
};

struct CUgraphExec_st {
  std::vector<CUgraphNode_st> nodes;
};

struct CUstream_st {
  CUctx_st* ctx = nullptr;
  unsigned flags = 0;
  int priority = 0;
  bool legacy = false;
  uint32_t id = 0;                      // process-unique (the records' streamId)
  uint64_t last_seq = 0;                // seq (in its context) of the last kernel queued here
  std::unique_ptr<CUgraph_st> capture;  // non-null while capturing
};

struct CUctx_st {
  int ordinal = 0;
  int physical = 0;
  unsigned flags = 0;
  bool primary = false;
  uint32_t id = 0;               // process-unique (the records' contextId)
  vgpu::fake::ContextRef sched;  // its queue on the GPU (SharedState)
  uint64_t submitted = 0;        // seq of the last kernel queued in this context
  // Events recorded here whose kernel has not been seen complete: resolved at the latest when
  // that kernel's queue entry is reused (kernel_queue.cpp).
  std::vector<CUevent_st*> waiting_events;
  std::unique_ptr<CUstream_st> legacy_stream;
  std::set<CUctx_st*> peers;  // contexts whose memory this one may access (cuCtxEnablePeerAccess)
  std::map<std::thread::id, std::unique_ptr<CUstream_st>> per_thread_streams;
};

struct CUevent_st {
  CUctx_st* ctx = nullptr;
  unsigned flags = 0;
  bool recorded = false;
  bool resolved = true;  // time_ns is known
  // While not resolved: it completes with kernel `target_seq` of context `target_ctx`.
  vgpu::fake::ContextRef target_ctx;
  uint64_t target_seq = 0;
  CUctx_st* waiting_in = nullptr;  // the context whose waiting_events holds it
  int64_t time_ns = 0;
};

struct CUfunc_st {
  CUmod_st* module = nullptr;
  std::string name;
};

struct CUmod_st {
  CUctx_st* ctx = nullptr;
  std::map<std::string, std::unique_ptr<CUfunc_st>> functions;
};

struct CUarray_st {
  CUctx_st* ctx = nullptr;
  uint64_t bytes = 0;
};

struct CUmipmappedArray_st {
  CUctx_st* ctx = nullptr;
  uint64_t bytes = 0;
};

struct CUmemPoolHandle_st {
  int ordinal = 0;
  bool is_default = false;
};

namespace vgpu::fake {

template <typename T>
using Registry = std::map<T*, std::unique_ptr<T>>;

template <typename T>
T* Adopt(Registry<T>& registry, std::unique_ptr<T> object) {
  T* raw = object.get();
  registry.emplace(raw, std::move(object));
  return raw;
}

template <typename T>
bool Has(const Registry<T>& registry, T* object) {
  return object != nullptr && registry.count(object) != 0;
}

inline constexpr uint64_t kGranularity = 2ULL << 20;  // VMM granularity, array rounding
inline constexpr uint64_t kAllocAlignment = 512;

enum class AllocKind { kDevice, kPitch, kManaged, kAsync, kGraph };

struct Allocation {
  uint64_t size = 0;
  int physical = 0;
  CUctx_st* ctx = nullptr;  // owner; null for pool/graph memory (freed only explicitly)
  AllocKind kind = AllocKind::kDevice;
  CUmemoryPool pool = nullptr;
  // Managed memory hints (cuMemAdvise / cuMemPrefetchAsync), kept per allocation: the fake does
  // not track pages, so a hint on any part of an allocation applies to all of it.
  bool read_mostly = false;
  CUmemLocation preferred{CU_MEM_LOCATION_TYPE_INVALID, 0};
  CUmemLocation last_prefetch{CU_MEM_LOCATION_TYPE_INVALID, 0};
};

struct PhysicalHandle {
  uint64_t size = 0;
  int physical = 0;
  bool released = false;
  int mappings = 0;
};

struct Mapping {
  uint64_t size = 0;
  CUmemGenericAllocationHandle handle = 0;
};

struct PrimaryContext {
  CUctx_st* ctx = nullptr;  // null while inactive
  unsigned refs = 0;
  unsigned flags = 0;
};

struct Driver {
  std::mutex mu;
  uint32_t next_context_id = 1;  // ids of the kernel records (fake_kernel_records.h)
  uint32_t next_stream_id = 1;
  uint32_t next_correlation_id = 1;
  bool init_done = false;
  CUresult init_result = CUDA_ERROR_NOT_INITIALIZED;
  FakeConfig config;
  std::vector<int> visible;  // CUDA ordinal -> physical index
  SharedState* shared = nullptr;

  Registry<CUctx_st> contexts;
  std::vector<PrimaryContext> primary;  // per ordinal
  Registry<CUstream_st> streams;
  Registry<CUevent_st> events;
  Registry<CUmod_st> modules;
  Registry<CUarray_st> arrays;
  Registry<CUmipmappedArray_st> mipmapped_arrays;
  Registry<CUmemPoolHandle_st> pools;
  std::vector<CUmemPoolHandle_st*> default_pools;  // per ordinal
  Registry<CUgraph_st> graphs;
  Registry<CUgraphExec_st> graph_execs;

  std::map<CUdeviceptr, Allocation> allocations;  // by base address
  std::map<CUmemGenericAllocationHandle, PhysicalHandle> handles;
  CUmemGenericAllocationHandle next_handle = 1;
  std::map<CUdeviceptr, uint64_t> reservations;  // base -> size
  std::map<CUdeviceptr, Mapping> mappings;       // base -> mapping
  CUdeviceptr next_va = 0x7e0000000000ULL;
};

Driver& D();
std::vector<CUctx_st*>& ContextStack();  // this thread's; back() is current

// All helpers below expect D().mu held.
CUresult CheckInit();
CUresult CheckDevice(CUdevice dev);
CUresult CurrentContext(CUctx_st** out);
int PhysicalOf(CUdevice ordinal);
const GpuSpec& Gpu(int physical);
CUresult Charge(int physical, uint64_t bytes);  // CUDA_ERROR_OUT_OF_MEMORY when it does not fit
void Uncharge(int physical, uint64_t bytes);
CUdeviceptr ReserveAddress(uint64_t size, uint64_t alignment);
CUresult CreateContext(CUdevice dev, unsigned flags, bool primary, CUctx_st** out);
void DestroyContext(CUctx_st* ctx);  // frees everything the context owns
// Resolves a stream handle: 0 -> legacy (or per-thread with per_thread), CU_STREAM_LEGACY,
// CU_STREAM_PER_THREAD, or a created stream.
CUresult ResolveStream(CUstream handle, bool per_thread, CUstream_st** out);
std::unique_ptr<CUstream_st> NewStream(CUctx_st* ctx);
CUresult FreeAllocation(CUdeviceptr ptr);

}  // namespace vgpu::fake
