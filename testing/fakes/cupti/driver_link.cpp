#include "driver_link.h"

#include <dlfcn.h>

#include <atomic>

namespace vgpu::fake::cupti {

VgpuFakeTakeKernelRecordsFn TakeKernelRecordsFn() {
  static std::atomic<VgpuFakeTakeKernelRecordsFn> cached{nullptr};
  if (auto fn = cached.load(std::memory_order_acquire)) return fn;
  constexpr const char* kName = "vgpuFakeTakeKernelRecords";
  void* symbol = dlsym(RTLD_DEFAULT, kName);
  if (symbol == nullptr) {
    // Loaded with RTLD_LOCAL (e.g. dlopen'ed by a wrapper): reach it by name, never load it.
    if (void* handle = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD)) {
      symbol = dlsym(handle, kName);  // the handle stays open: the driver is never unloaded
    }
  }
  auto fn = reinterpret_cast<VgpuFakeTakeKernelRecordsFn>(symbol);
  if (fn != nullptr) cached.store(fn, std::memory_order_release);
  return fn;
}

}  // namespace vgpu::fake::cupti
