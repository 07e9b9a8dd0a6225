/* No SM limit: launches go straight to the driver. Replaced by the SM limiter. */
#include "launch_limiter.h"

CUresult vgpu_limiter_before_launch(const struct vgpu_launch* launch) {
  (void)launch;
  return CUDA_SUCCESS;
}

void vgpu_limiter_after_launch(const struct vgpu_launch* launch, CUresult result) {
  (void)launch;
  (void)result;
}

void vgpu_limiter_capture_begun(void) {}

void vgpu_limiter_capture_ended(void) {}

void vgpu_limiter_before_sync(void) {}
