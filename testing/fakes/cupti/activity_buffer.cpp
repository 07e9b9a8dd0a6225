#include "activity_buffer.h"

#include <cstring>

namespace vgpu::fake::cupti {
namespace {

constexpr size_t kAlignment = ACTIVITY_RECORD_ALIGNMENT;

size_t FirstOffset(const uint8_t* buffer) {
  const auto address = reinterpret_cast<uintptr_t>(buffer);
  return (kAlignment - address % kAlignment) % kAlignment;
}

}  // namespace

size_t RecordSize(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return sizeof(CUpti_ActivityKernel10);
    default:
      return 0;
  }
}

CUptiResult NextRecord(uint8_t* buffer, size_t valid_size, CUpti_Activity** record) {
  if (buffer == nullptr || record == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  size_t offset = FirstOffset(buffer);
  if (*record != nullptr) {
    const auto* previous = reinterpret_cast<uint8_t*>(*record);
    const size_t size = RecordSize((*record)->kind);
    if (size == 0 || previous < buffer) return CUPTI_ERROR_INVALID_KIND;
    offset = static_cast<size_t>(previous - buffer) + size;
  }
  if (offset + sizeof(CUpti_Activity) > valid_size) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  auto* next = reinterpret_cast<CUpti_Activity*>(buffer + offset);
  const size_t size = RecordSize(next->kind);
  if (size == 0) return CUPTI_ERROR_INVALID_KIND;
  if (offset + size > valid_size) return CUPTI_ERROR_MAX_LIMIT_REACHED;  // incomplete
  *record = next;
  return CUPTI_SUCCESS;
}

bool BufferFiller::Append(const CUpti_ActivityKernel10& record,
                          CUpti_BuffersCallbackRequestFunc request,
                          std::vector<FilledBuffer>* full) {
  constexpr size_t kSize = sizeof(CUpti_ActivityKernel10);
  if (data_ == nullptr) {
    uint8_t* data = nullptr;
    size_t size = 0;
    size_t max_records = 0;
    if (request != nullptr) request(&data, &size, &max_records);
    if (data == nullptr) return false;
    if (size < FirstOffset(data) + kSize) {
      full->push_back(FilledBuffer{data, size, 0});  // useless: back to its owner
      return false;
    }
    data_ = data;
    size_ = size;
    used_ = FirstOffset(data);
    max_records_ = max_records;
    records_ = 0;
  }
  std::memcpy(data_ + used_, &record, kSize);
  used_ += kSize;
  ++records_;
  if (used_ + kSize > size_ || (max_records_ > 0 && records_ >= max_records_)) Close(full, true);
  return true;
}

void BufferFiller::Close(std::vector<FilledBuffer>* full, bool even_empty) {
  if (data_ == nullptr || (records_ == 0 && !even_empty)) return;
  full->push_back(FilledBuffer{data_, size_, records_ == 0 ? 0 : used_});
  data_ = nullptr;
}

}  // namespace vgpu::fake::cupti
