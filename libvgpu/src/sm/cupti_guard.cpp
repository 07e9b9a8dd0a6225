// CUPTI's activity API has one client per process. libvgpu exports the calls by which an
// application (a profiler such as PyTorch's) changes what that client gets, and forwards each to
// the process's libcupti unchanged: registering its own buffers or finalizing CUPTI stops our
// kernel records (the limiter then measures with CUDA events and says so once); a clock of its own
// is converted back; the kernel kind turned off is turned on again; a subscription to CUPTI's
// callbacks keeps CUPTI attached from then on (detaching, cuptiFinalize, would end it).

#include <cupti.h>
#include <dlfcn.h>

#include "kernel_records.h"

extern "C" void* vgpu_real_dlsym(void* handle, const char* name);  // real_driver.h

namespace {

void* RealCupti(const char* name) {
  static const char* const kSonames[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};
  if (void* fn = vgpu_real_dlsym(RTLD_NEXT, name)) return fn;
  for (const char* soname : kSonames) {
    if (void* h = dlopen(soname, RTLD_NOW | RTLD_NOLOAD)) {
      if (void* fn = vgpu_real_dlsym(h, name)) return fn;
    }
  }
  return nullptr;
}

template <typename Fn>
Fn Real(const char* name) {
  return reinterpret_cast<Fn>(RealCupti(name));
}

bool OurKind(CUpti_ActivityKind kind) {
  return kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || kind == CUPTI_ACTIVITY_KIND_KERNEL;
}

}  // namespace

extern "C" {

__attribute__((visibility("hidden"))) CUptiResult vgpu_hook_cuptiActivityRegisterCallbacks(
    CUpti_BuffersCallbackRequestFunc requested, CUpti_BuffersCallbackCompleteFunc completed) {
  vgpu::sm::kernel_records::MarkTakenByApplication("cuptiActivityRegisterCallbacks");
  auto real =
      Real<CUptiResult (*)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc)>(
          "cuptiActivityRegisterCallbacks");
  return real != nullptr ? real(requested, completed) : CUPTI_ERROR_NOT_INITIALIZED;
}

__attribute__((visibility("hidden"))) CUptiResult vgpu_hook_cuptiActivityRegisterTimestampCallback(
    CUpti_TimestampCallbackFunc fn) {
  auto real =
      Real<CUptiResult (*)(CUpti_TimestampCallbackFunc)>("cuptiActivityRegisterTimestampCallback");
  const CUptiResult rc = real != nullptr ? real(fn) : CUPTI_ERROR_NOT_INITIALIZED;
  if (rc == CUPTI_SUCCESS) vgpu::sm::kernel_records::ApplicationClock(fn);
  return rc;
}

__attribute__((visibility("hidden"))) CUptiResult vgpu_hook_cuptiActivityDisable(
    CUpti_ActivityKind kind) {
  auto real = Real<CUptiResult (*)(CUpti_ActivityKind)>("cuptiActivityDisable");
  const CUptiResult rc = real != nullptr ? real(kind) : CUPTI_ERROR_NOT_INITIALIZED;
  if (rc == CUPTI_SUCCESS && OurKind(kind)) vgpu::sm::kernel_records::ApplicationDisabledKernels();
  return rc;
}

__attribute__((visibility("hidden"))) CUptiResult vgpu_hook_cuptiSubscribe(
    CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback, void* userdata) {
  vgpu::sm::kernel_records::KeepAttached();
  auto real =
      Real<CUptiResult (*)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*)>("cuptiSubscribe");
  return real != nullptr ? real(subscriber, callback, userdata) : CUPTI_ERROR_NOT_INITIALIZED;
}

__attribute__((visibility("hidden"))) CUptiResult vgpu_hook_cuptiSubscribe_v2(
    CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback, void* userdata,
    CUpti_SubscriberParams* params) {
  vgpu::sm::kernel_records::KeepAttached();
  auto real = Real<CUptiResult (*)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*,
                                   CUpti_SubscriberParams*)>("cuptiSubscribe_v2");
  return real != nullptr ? real(subscriber, callback, userdata, params)
                         : CUPTI_ERROR_NOT_INITIALIZED;
}

__attribute__((visibility("hidden"))) CUptiResult vgpu_hook_cuptiFinalize(void) {
  vgpu::sm::kernel_records::MarkTakenByApplication("cuptiFinalize");
  auto real = Real<CUptiResult (*)()>("cuptiFinalize");
  return real != nullptr ? real() : CUPTI_ERROR_NOT_INITIALIZED;
}

}  // extern "C"
