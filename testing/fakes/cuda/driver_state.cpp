#include "driver_state.h"

#include <algorithm>

#include "../sim_clock.h"

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

KernelSpec MakeKernelSpec(unsigned gx, unsigned gy, unsigned gz, void** params) {
  KernelSpec spec;
  spec.blocks = static_cast<uint64_t>(gx) * gy * gz;
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

CUresult CreateContext(CUdevice dev, unsigned flags, bool primary, CUctx_st** out) {
  const int physical = PhysicalOf(dev);
  if (auto rc = Charge(physical, D().config.context_memory); rc != CUDA_SUCCESS) return rc;
  auto ctx = std::make_unique<CUctx_st>();
  ctx->ordinal = dev;
  ctx->physical = physical;
  ctx->flags = flags;
  ctx->primary = primary;
  ctx->legacy_stream = std::make_unique<CUstream_st>();
  ctx->legacy_stream->ctx = ctx.get();
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
  EraseOwnedBy(d.events, ctx);
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
    if (!slot) {
      slot = std::make_unique<CUstream_st>();
      slot->ctx = ctx;
    }
    *out = slot.get();
    return CUDA_SUCCESS;
  }
  if (!Has(D().streams, handle)) return CUDA_ERROR_INVALID_HANDLE;
  *out = handle;
  return CUDA_SUCCESS;
}

int64_t StreamTail(const CUstream_st* s) {
  // The legacy default stream waits for all blocking work of its context.
  return s->legacy ? std::max(s->tail_ns, s->ctx->tail_ns) : s->tail_ns;
}

CUresult EnqueueKernel(CUstream_st* s, const KernelSpec& spec) {
  if (s->capture) {
    auto node = std::make_unique<CUgraphNode_st>();
    node->kind = CUgraphNode_st::Kind::kKernel;
    node->kernel = spec;
    s->capture->nodes.push_back(std::move(node));
    return CUDA_SUCCESS;
  }
  CUctx_st* ctx = s->ctx;
  const int64_t duration = KernelDurationNs(spec, Gpu(ctx->physical).sms);
  const KernelTimes t = D().shared->ScheduleKernel(ctx->physical, StreamTail(s), duration);
  s->tail_ns = t.end_ns;
  ctx->tail_ns = std::max(ctx->tail_ns, t.end_ns);
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
