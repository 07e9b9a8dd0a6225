#pragma once

// Activity buffers as CUPTI hands them to its client: records packed from the buffer's first
// 8-byte aligned address (ACTIVITY_RECORD_ALIGNMENT), each the size of its kind's record, read
// back with cuptiActivityGetNextRecord.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cupti_api.h"

namespace vgpu::fake::cupti {

// Size of a record of `kind` in a buffer; 0 for kinds this library never writes.
size_t RecordSize(CUpti_ActivityKind kind);

// cuptiActivityGetNextRecord.
CUptiResult NextRecord(uint8_t* buffer, size_t valid_size, CUpti_Activity** record);

// A buffer on its way back to the client.
struct FilledBuffer {
  uint8_t* data = nullptr;
  size_t size = 0;
  size_t valid = 0;
};

// Fills buffers obtained from the client's bufferRequested callback. A buffer is full when the
// next record would not fit or it holds the client's maxNumRecords.
class BufferFiller {
 public:
  // Appends a kernel record, requesting a buffer when none is open. Returns false when the record
  // is dropped: the client gave no buffer, or one too small for a record (then handed back in
  // `full` with nothing in it).
  bool Append(const CUpti_ActivityKernel10& record, CUpti_BuffersCallbackRequestFunc request,
              std::vector<FilledBuffer>* full);
  // Hands the open buffer to `full` if it holds a record (or, with `even_empty`, any open one).
  void Close(std::vector<FilledBuffer>* full, bool even_empty);

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t used_ = 0;  // offset of the next record
  size_t max_records_ = 0;
  size_t records_ = 0;
};

}  // namespace vgpu::fake::cupti
