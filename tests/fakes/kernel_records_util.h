#pragma once

// Reads this process's kernel records through the fake-only export of the fake libcuda
// (fake_kernel_records.h), which the test executables link.

#include <gtest/gtest.h>

#include <vector>

#include "fake_kernel_records.h"

namespace vgpu::fake::test {

class RecordReader {
 public:
  // Records of kernels completing from now on (needs cuInit).
  RecordReader() {
    unsigned n = 0;
    EXPECT_EQ(vgpuFakeTakeKernelRecords(&cursor_, nullptr, 0, &n), 0);
  }
  std::vector<VgpuFakeKernelRecord> Take() {
    std::vector<VgpuFakeKernelRecord> out;
    VgpuFakeKernelRecord batch[64];
    unsigned n = 0;
    do {
      EXPECT_EQ(vgpuFakeTakeKernelRecords(&cursor_, batch, 64, &n), 0);
      out.insert(out.end(), batch, batch + n);
    } while (n == 64);
    return out;
  }
  const VgpuFakeKernelCursor& cursor() const { return cursor_; }

 private:
  VgpuFakeKernelCursor cursor_{};
};

}  // namespace vgpu::fake::test
