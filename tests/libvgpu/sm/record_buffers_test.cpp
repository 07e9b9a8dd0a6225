#include "record_buffers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace vgpu::sm {
namespace {

// CUPTI's buffers hold what the process launches in ~16 ms (~240 bytes a record), in whole pages,
// from 4 KB (a slow launcher of long kernels: a buffer is handed back only once every record in it
// is complete) to 64 KB (a fast launcher: fewer hand-backs, fewer wake-ups of CUPTI's thread).
TEST(RecordBuffers, HoldAboutSixteenMillisecondsOfLaunches) {
  struct Case {
    double launches_per_s;
    size_t want;
  };
  const Case cases[] = {
      {0, 4096},        // not launching (yet)
      {-5, 4096},       // nonsense in: the smallest
      {500, 4096},      // a matmul loop: 8 records in 16 ms, fewer than 4 KB holds
      {1'066, 4096},    // 17 records: still one page
      {2'000, 8192},    // 32 records, 7 680 bytes: rounded up to two pages
      {10'000, 40960},  // 160 records, 38 400 bytes
      {22'000, 65536},  // a PyTorch training loop: 84 480 bytes, capped
      {1e7, 65536},     // a launch-bound loop of empty kernels
      {std::numeric_limits<double>::infinity(), 65536},
      {std::nan(""), 4096},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(RecordBufferBytes(c.launches_per_s), c.want) << c.launches_per_s << " launches/s";
  }
}

}  // namespace
}  // namespace vgpu::sm
