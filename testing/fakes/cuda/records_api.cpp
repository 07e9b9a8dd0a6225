// The fake-only records export (fake_kernel_records.h): what the fake libcupti reads its kernel
// activity records from.

#include "../fake_kernel_records.h"
#include "driver_state.h"

using namespace vgpu::fake;

extern "C" {

FAKE_EXPORT int vgpuFakeTakeKernelRecords(VgpuFakeKernelCursor* cursor,
                                          VgpuFakeKernelRecord* records, unsigned int capacity,
                                          unsigned int* count) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (cursor == nullptr || count == nullptr || (records == nullptr && capacity > 0))
    return CUDA_ERROR_INVALID_VALUE;
  *count =
      D().shared->TakeRecords(static_cast<int>(D().config.gpus.size()), cursor, records, capacity);
  cursor->next_correlation_id = D().next_correlation_id;
  return CUDA_SUCCESS;
}

}  // extern "C"
