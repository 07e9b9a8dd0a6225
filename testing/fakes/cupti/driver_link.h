#pragma once

// The fake libcupti learns the process's kernels from the fake libcuda.so.1's fake-only export
// (fake_kernel_records.h). It never loads the driver itself: it looks in the libcuda.so.1 the
// process has already loaded (as an application's own CUDA calls load it).

#include "../fake_kernel_records.h"

namespace vgpu::fake::cupti {

// The export, or nullptr while no fake libcuda.so.1 is loaded. Found once, then cached.
VgpuFakeTakeKernelRecordsFn TakeKernelRecordsFn();

}  // namespace vgpu::fake::cupti
