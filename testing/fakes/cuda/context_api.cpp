// Primary and explicit contexts and the per-thread context stack. Creating a context charges
// VGPU_FAKE_CONTEXT_MEMORY on its device; destroying it frees that and everything it owns.

#include <algorithm>

#include "driver_state.h"
#include "kernel_queue.h"

using namespace vgpu::fake;

namespace {

void ForgetOnAllStacksOfThisThread(CUctx_st* ctx) {
  auto& stack = ContextStack();
  std::replace(stack.begin(), stack.end(), ctx, static_cast<CUctx_st*>(nullptr));
  while (!stack.empty() && stack.back() == nullptr) stack.pop_back();
}

CUresult CreateExplicit(CUcontext* pctx, unsigned flags, CUdevice dev) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (auto rc = CheckDevice(dev); rc != CUDA_SUCCESS) return rc;
  CUctx_st* ctx = nullptr;
  if (auto rc = CreateContext(dev, flags, false, &ctx); rc != CUDA_SUCCESS) return rc;
  ContextStack().push_back(ctx);  // a new context becomes current, as with cuCtxPushCurrent
  *pctx = ctx;
  return CUDA_SUCCESS;
}

CUresult Synchronize(CUcontext ctx) {
  WaitTarget target;
  {
    std::lock_guard<std::mutex> lock(D().mu);
    if (ctx == nullptr) {
      if (auto rc = CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
    } else if (auto rc = CheckInit(); rc != CUDA_SUCCESS) {
      return rc;
    } else if (!Has(D().contexts, ctx)) {
      return CUDA_ERROR_INVALID_CONTEXT;
    }
    target = ContextTarget(ctx);
  }
  WaitUntilDone(target);
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckDevice(dev); rc != CUDA_SUCCESS) return rc;
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto& p = D().primary[static_cast<size_t>(dev)];
  if (p.ctx == nullptr) {
    if (auto rc = CreateContext(dev, p.flags, true, &p.ctx); rc != CUDA_SUCCESS) return rc;
  }
  ++p.refs;
  *pctx = p.ctx;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckDevice(dev); rc != CUDA_SUCCESS) return rc;
  auto& p = D().primary[static_cast<size_t>(dev)];
  if (p.refs == 0 || p.ctx == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  if (--p.refs == 0) {
    ForgetOnAllStacksOfThisThread(p.ctx);
    DestroyContext(p.ctx);
    p.ctx = nullptr;
  }
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
  return cuDevicePrimaryCtxRelease_v2(dev);
}

CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckDevice(dev); rc != CUDA_SUCCESS) return rc;
  auto& p = D().primary[static_cast<size_t>(dev)];
  if (p.ctx != nullptr) {
    ForgetOnAllStacksOfThisThread(p.ctx);
    DestroyContext(p.ctx);
  }
  p.ctx = nullptr;
  p.refs = 0;
  p.flags = 0;
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxReset(CUdevice dev) {
  return cuDevicePrimaryCtxReset_v2(dev);
}

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckDevice(dev); rc != CUDA_SUCCESS) return rc;
  if (flags == nullptr || active == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const auto& p = D().primary[static_cast<size_t>(dev)];
  *flags = p.flags;
  *active = p.ctx != nullptr ? 1 : 0;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckDevice(dev); rc != CUDA_SUCCESS) return rc;
  constexpr unsigned kKnown = CU_CTX_SCHED_MASK | CU_CTX_MAP_HOST | CU_CTX_LMEM_RESIZE_TO_MAX |
                              CU_CTX_COREDUMP_ENABLE | CU_CTX_USER_COREDUMP_ENABLE |
                              CU_CTX_SYNC_MEMOPS;
  if ((flags & ~kKnown) != 0) return CUDA_ERROR_INVALID_VALUE;
  auto& p = D().primary[static_cast<size_t>(dev)];
  p.flags = flags;
  if (p.ctx != nullptr) p.ctx->flags = flags;
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags) {
  return cuDevicePrimaryCtxSetFlags_v2(dev, flags);
}

CUresult cuCtxCreate_v4(CUcontext* pctx, CUctxCreateParams* /*params*/, unsigned int flags,
                        CUdevice dev) {
  return CreateExplicit(pctx, flags, dev);
}
CUresult cuCtxCreate_v3(CUcontext* pctx, CUexecAffinityParam* /*params*/, int /*n*/,
                        unsigned int flags, CUdevice dev) {
  return CreateExplicit(pctx, flags, dev);
}
CUresult cuCtxCreate_v2(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  return CreateExplicit(pctx, flags, dev);
}
CUresult cuCtxCreate(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  return CreateExplicit(pctx, flags, dev);
}

CUresult cuCtxDestroy_v2(CUcontext ctx) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (!Has(D().contexts, ctx) || ctx->primary) return CUDA_ERROR_INVALID_CONTEXT;
  ForgetOnAllStacksOfThisThread(ctx);
  DestroyContext(ctx);
  return CUDA_SUCCESS;
}
CUresult cuCtxDestroy(CUcontext ctx) {
  return cuCtxDestroy_v2(ctx);
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  auto& stack = ContextStack();
  if (ctx == nullptr) {
    if (!stack.empty()) stack.pop_back();
    return CUDA_SUCCESS;
  }
  if (!Has(D().contexts, ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  if (stack.empty()) {
    stack.push_back(ctx);
  } else {
    stack.back() = ctx;
  }
  return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext* pctx) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto& stack = ContextStack();
  *pctx = stack.empty() ? nullptr : stack.back();
  return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (!Has(D().contexts, ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  ContextStack().push_back(ctx);
  return CUDA_SUCCESS;
}
CUresult cuCtxPushCurrent(CUcontext ctx) {
  return cuCtxPushCurrent_v2(ctx);
}

CUresult cuCtxPopCurrent_v2(CUcontext* pctx) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  auto& stack = ContextStack();
  if (stack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (pctx != nullptr) *pctx = stack.back();
  stack.pop_back();
  return CUDA_SUCCESS;
}
CUresult cuCtxPopCurrent(CUcontext* pctx) {
  return cuCtxPopCurrent_v2(pctx);
}

CUresult cuCtxGetDevice(CUdevice* device) {
  std::lock_guard<std::mutex> lock(D().mu);
  CUctx_st* ctx = nullptr;
  if (auto rc = CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *device = ctx->ordinal;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice_v2(CUdevice* device, CUcontext ctx) {
  if (ctx == nullptr) return cuCtxGetDevice(device);
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (!Has(D().contexts, ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *device = ctx->ordinal;
  return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void) {
  return Synchronize(nullptr);
}
CUresult cuCtxSynchronize_v2(CUcontext ctx) {
  return Synchronize(ctx);
}

CUresult cuCtxGetStreamPriorityRange(int* leastPriority, int* greatestPriority) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (leastPriority != nullptr) *leastPriority = 0;
  if (greatestPriority != nullptr) *greatestPriority = -5;
  return CUDA_SUCCESS;
}

}  // extern "C"
