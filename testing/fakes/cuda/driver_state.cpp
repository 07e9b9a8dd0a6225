#include "driver_state.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "kernel_queue.h"

namespace vgpu::fake {

Driver& D() {
  // Never destroyed: other threads may still call in while the process exits.
  static auto* driver = new Driver();  // NOLINT(cppcoreguidelines-owning-memory)
  return *driver;
}

std::vector<CUctx_st*>& ContextStack() {
  static thread_local std::vector<CUctx_st*> stack;
  return stack;
}

KernelSpec MakeKernelSpec(const unsigned (&grid)[3], const unsigned (&block)[3], void** params) {
  KernelSpec spec;
  std::copy(std::begin(grid), std::end(grid), spec.grid);
  std::copy(std::begin(block), std::end(block), spec.block);
  spec.blocks = static_cast<uint64_t>(grid[0]) * grid[1] * grid[2];
  if (params != nullptr && params[0] != nullptr) {
    spec.timed = true;
    spec.ns_per_wave = *static_cast<const uint64_t*>(params[0]);
  }
  return spec;
}

int64_t KernelDurationNs(const KernelSpec& spec, int sms) {
  if (!spec.timed) return kDefaultKernelNs;
  const uint64_t s = static_cast<uint64_t>(std::max(sms, 1));
  const uint64_t waves = (spec.blocks + s - 1) / s;
  return static_cast<int64_t>(spec.ns_per_wave * waves);
}

CUresult CheckInit() {
  return D().init_done ? D().init_result : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult CheckDevice(CUdevice dev) {
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (dev < 0 || dev >= static_cast<int>(D().visible.size())) return CUDA_ERROR_INVALID_DEVICE;
  return CUDA_SUCCESS;
}

CUresult CurrentContext(CUctx_st** out) {
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  auto& stack = ContextStack();
  if (stack.empty() || stack.back() == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  if (!Has(D().contexts, stack.back())) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  *out = stack.back();
  return CUDA_SUCCESS;
}

int PhysicalOf(CUdevice ordinal) {
  return D().visible[static_cast<size_t>(ordinal)];
}

const GpuSpec& Gpu(int physical) {
  return D().config.gpus[static_cast<size_t>(physical)];
}

CUresult Charge(int physical, uint64_t bytes) {
  if (bytes == 0) return CUDA_SUCCESS;
  return D().shared->TryCharge(physical, bytes, Gpu(physical).memory_bytes)
             ? CUDA_SUCCESS
             : CUDA_ERROR_OUT_OF_MEMORY;
}

void Uncharge(int physical, uint64_t bytes) {
  if (bytes != 0) D().shared->Release(physical, bytes);
}

CUdeviceptr ReserveAddress(uint64_t size, uint64_t alignment) {
  auto& d = D();
  alignment = std::max<uint64_t>(alignment, kAllocAlignment);
  const CUdeviceptr base = (d.next_va + alignment - 1) / alignment * alignment;
  // Leave one alignment unit between ranges so off-by-one addresses never hit a neighbour.
  d.next_va =
      base + (std::max<uint64_t>(size, 1) + alignment - 1) / alignment * alignment + alignment;
  return base;
}

std::unique_ptr<CUstream_st> NewStream(CUctx_st* ctx) {
  auto s = std::make_unique<CUstream_st>();
  s->ctx = ctx;
  s->id = D().next_stream_id++;
  return s;
}

CUresult CreateContext(CUdevice dev, unsigned flags, bool primary, CUctx_st** out) {
  const int physical = PhysicalOf(dev);
  if (auto rc = Charge(physical, D().config.context_memory); rc != CUDA_SUCCESS) return rc;
  // A real driver takes the context's memory early and goes on setting it up for a while.
  if (D().config.context_create_ns > 0) {
    std::this_thread::sleep_for(std::chrono::nanoseconds(D().config.context_create_ns));
  }
  auto ctx = std::make_unique<CUctx_st>();
  // Its queue on the GPU is opened at its first launch (kernel_queue.cpp): hundreds of processes
  // may hold contexts at once, and only those that launch need a place in the GPU's schedule.
  ctx->id = D().next_context_id++;
  ctx->ordinal = dev;
  ctx->physical = physical;
  ctx->flags = flags;
  ctx->primary = primary;
  ctx->legacy_stream = NewStream(ctx.get());
  ctx->legacy_stream->legacy = true;
  *out = Adopt(D().contexts, std::move(ctx));
  return CUDA_SUCCESS;
}

namespace {
template <typename T>
void EraseOwnedBy(Registry<T>& registry, CUctx_st* ctx) {
  std::erase_if(registry, [ctx](const auto& kv) { return kv.second->ctx == ctx; });
}
}  // namespace

void DestroyContext(CUctx_st* ctx) {
  auto& d = D();
  for (auto& [other, owned] : d.contexts) owned->peers.erase(ctx);  // access to it ends with it
  for (auto it = d.allocations.begin(); it != d.allocations.end();) {
    if (it->second.ctx == ctx) {
      Uncharge(it->second.physical, it->second.size);
      it = d.allocations.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& [mod, owned] : d.modules) {
    if (owned->ctx == ctx) Uncharge(ctx->physical, d.config.module_memory);
  }
  EraseOwnedBy(d.modules, ctx);
  for (auto& [arr, owned] : d.arrays) {
    if (owned->ctx == ctx) Uncharge(ctx->physical, owned->bytes);
  }
  EraseOwnedBy(d.arrays, ctx);
  for (auto& [arr, owned] : d.mipmapped_arrays) {
    if (owned->ctx == ctx) Uncharge(ctx->physical, owned->bytes);
  }
  EraseOwnedBy(d.mipmapped_arrays, ctx);
  EraseOwnedBy(d.streams, ctx);
  for (auto& [e, owned] : d.events) {
    if (owned->ctx == ctx) ForgetEvent(e);  // it may wait in another context's list
  }
  EraseOwnedBy(d.events, ctx);
  ForgetWaitingEvents(ctx);
  // Kernels already queued still run (and keep the GPU busy) until they are done.
  d.shared->CloseContext(ctx->sched);
  Uncharge(ctx->physical, d.config.context_memory);
  d.contexts.erase(ctx);
}

CUresult ResolveStream(CUstream handle, bool per_thread, CUstream_st** out) {
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (handle == nullptr) handle = per_thread ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY;
  if (handle == CU_STREAM_LEGACY || handle == CU_STREAM_PER_THREAD) {
    CUctx_st* ctx = nullptr;
    if (auto rc = CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
    if (handle == CU_STREAM_LEGACY) {
      *out = ctx->legacy_stream.get();
      return CUDA_SUCCESS;
    }
    auto& slot = ctx->per_thread_streams[std::this_thread::get_id()];
    if (!slot) slot = NewStream(ctx);
    *out = slot.get();
    return CUDA_SUCCESS;
  }
  if (!Has(D().streams, handle)) return CUDA_ERROR_INVALID_HANDLE;
  *out = handle;
  return CUDA_SUCCESS;
}

CUresult FreeAllocation(CUdeviceptr ptr) {
  auto& d = D();
  auto it = d.allocations.find(ptr);
  if (it == d.allocations.end()) return CUDA_ERROR_INVALID_VALUE;
  Uncharge(it->second.physical, it->second.size);
  d.allocations.erase(it);
  return CUDA_SUCCESS;
}

}  // namespace vgpu::fake
