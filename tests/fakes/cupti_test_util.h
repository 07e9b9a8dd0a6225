#pragma once

// A CUPTI activity client for the fake libcupti tests: buffers from the heap, every delivered
// record kept with the thread that delivered it. One per process (CUPTI's callbacks are plain
// functions).

#include <cupti.h>
#include <stdlib.h>
#include <time.h>

#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace vgpu::fake::test {

struct DeliveredBuffer {
  std::thread::id thread;
  size_t records = 0;
  size_t valid = 0;
};

class CuptiClient {
 public:
  static CuptiClient& Get() {
    static CuptiClient client;
    return client;
  }
  // Buffers of `size` bytes holding at most `max_records` (0: as many as fit); size 0: none given.
  void SetBuffers(size_t size, size_t max_records) {
    std::lock_guard<std::mutex> lock(mu_);
    size_ = size;
    max_records_ = max_records;
  }
  CUptiResult Register() { return cuptiActivityRegisterCallbacks(Requested, Completed); }
  std::vector<CUpti_ActivityKernel10> Records() {
    std::lock_guard<std::mutex> lock(mu_);
    return records_;
  }
  std::vector<DeliveredBuffer> Buffers() {
    std::lock_guard<std::mutex> lock(mu_);
    return buffers_;
  }
  void Clear() {
    std::lock_guard<std::mutex> lock(mu_);
    records_.clear();
    buffers_.clear();
  }

  static uint64_t CUPTIAPI Monotonic() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(ts.tv_nsec);
  }

 private:
  static void CUPTIAPI Requested(uint8_t** buffer, size_t* size, size_t* max_records) {
    CuptiClient& c = Get();
    std::lock_guard<std::mutex> lock(c.mu_);
    *buffer = c.size_ == 0 ? nullptr : static_cast<uint8_t*>(aligned_alloc(8, c.size_));
    *size = c.size_;
    *max_records = c.max_records_;
  }
  static void CUPTIAPI Completed(CUcontext /*ctx*/, uint32_t /*stream*/, uint8_t* buffer,
                                 size_t /*size*/, size_t valid) {
    CuptiClient& c = Get();
    std::lock_guard<std::mutex> lock(c.mu_);
    DeliveredBuffer b{std::this_thread::get_id(), 0, valid};
    CUpti_Activity* record = nullptr;
    while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
      c.records_.push_back(*reinterpret_cast<CUpti_ActivityKernel10*>(record));
      ++b.records;
    }
    c.buffers_.push_back(b);
    free(buffer);
  }

  std::mutex mu_;
  size_t size_ = 64 * 1024;
  size_t max_records_ = 0;
  std::vector<CUpti_ActivityKernel10> records_;
  std::vector<DeliveredBuffer> buffers_;
};

}  // namespace vgpu::fake::test
