// The fake libcupti.so.13's entry points (see activity_service.h): the subset of the Activity API
// that the SM limiter uses, with CUDA 13's signatures.

#include "cupti_api.h"

#include "activity_buffer.h"
#include "activity_service.h"

using vgpu::fake::cupti::ActivityService;

extern "C" {

CUptiResult cuptiGetVersion(uint32_t* version) {
  if (version == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *version = CUPTI_API_VERSION;
  return CUPTI_SUCCESS;
}

CUptiResult cuptiGetTimestamp(uint64_t* timestamp) {
  if (timestamp == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *timestamp = ActivityService::Get().Timestamp();
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc funcBufferRequested,
                                           CUpti_BuffersCallbackCompleteFunc funcBufferCompleted) {
  return ActivityService::Get().RegisterCallbacks(funcBufferRequested, funcBufferCompleted);
}

CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc funcTimestamp) {
  return ActivityService::Get().RegisterTimestampCallback(funcTimestamp);
}

CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) {
  return ActivityService::Get().Enable(kind);
}

CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind) {
  return ActivityService::Get().Disable(kind);
}

CUptiResult cuptiActivityFlushAll(uint32_t flag) {
  return ActivityService::Get().FlushAll(flag);
}

CUptiResult cuptiActivityFlushPeriod(uint32_t time) {
  return ActivityService::Get().FlushPeriod(time);
}

CUptiResult cuptiActivityGetNextRecord(uint8_t* buffer, size_t validBufferSizeBytes,
                                       CUpti_Activity** record) {
  return vgpu::fake::cupti::NextRecord(buffer, validBufferSizeBytes, record);
}

CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext /*context*/, uint32_t /*streamId*/,
                                              size_t* dropped) {
  return ActivityService::Get().TakeDropped(dropped);  // one queue for all contexts
}

// The callback API: a subscription only (no callback is ever made). One subscriber at a time.
CUptiResult cuptiSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc /*callback*/,
                           void* /*userdata*/) {
  return ActivityService::Get().Subscribe(subscriber);
}

CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle subscriber) {
  return ActivityService::Get().Unsubscribe(subscriber);
}

CUptiResult cuptiFinalize(void) {
  return ActivityService::Get().Finalize();
}

}  // extern "C"
