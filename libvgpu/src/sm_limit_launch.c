/* libvgpu's launch-limiter hooks (launch_limiter.h) backed by the SM limiter (sm_limit.h): this
 * file replaces launch_limiter_default.c in the library. It hands the limiter the real driver's
 * functions and the reserved SM fields of the container's region, once, on the first launch.
 * In a process without an SM limit a launch costs one load and one predictable branch here. */
#include <stddef.h>
#include <stdint.h>

#include "launch_limiter.h"
#include "real_driver.h"
#include "sm_limit.h"
#include "state.h"

_Static_assert(sizeof(VgpuSmDeviceShared) <= sizeof(((struct vgpu_region_device*)0)->sm_reserved),
               "the SM limiter's per-device state must fit the region's reserved SM fields");
_Static_assert(sizeof(((struct vgpu_region_device*)0)->sm_limit_active) == sizeof(int32_t),
               "the node monitor's sharing flag is a 32-bit field");

static int g_sm_ready; /* atomic: vgpu_sm_init done */

/* The region record of the device keeps the container-wide budget in sm_reserved[] and the node
 * monitor's flag in sm_limit_active (VGPU_SM_SHARING_*: 0 not driven, 1 shared, 2 alone). */
static int resolve_state(int ordinal, VgpuSmDeviceShared** state, int32_t** sharing) {
  const int rdev = vgpu_ordinal_region_dev(ordinal);
  struct vgpu_region* r = g_vgpu.region.region;
  if (rdev < 0 || r == NULL) return -1;
  *state = (VgpuSmDeviceShared*)(void*)r->devices[rdev].sm_reserved;
  *sharing = (int32_t*)(void*)&r->devices[rdev].sm_limit_active;
  return 0;
}

static void* real_either(const char* name, const char* fallback) {
  void* fn = vgpu_real_cuda(name);
  return fn != NULL ? fn : vgpu_real_cuda(fallback);
}

static void sm_ready(void) {
  VgpuSmDriver driver;
  driver.ctx_get_device = (CUresult(*)(CUdevice*))vgpu_real_cuda("cuCtxGetDevice");
  driver.stream_is_capturing = (CUresult(*)(CUstream, CUstreamCaptureStatus*))real_either(
      "cuStreamIsCapturing", "cuStreamIsCapturing_ptsz");
  driver.device_get_uuid =
      (CUresult(*)(CUuuid*, CUdevice))real_either("cuDeviceGetUuid_v2", "cuDeviceGetUuid");
  driver.event_create = (CUresult(*)(CUevent*, unsigned int))vgpu_real_cuda("cuEventCreate");
  driver.event_record = (CUresult(*)(CUevent, CUstream))vgpu_real_cuda("cuEventRecord");
  driver.event_query = (CUresult(*)(CUevent))vgpu_real_cuda("cuEventQuery");
  driver.event_elapsed_time = (CUresult(*)(float*, CUevent, CUevent))real_either(
      "cuEventElapsedTime_v2", "cuEventElapsedTime");
  driver.event_destroy = (CUresult(*)(CUevent))real_either("cuEventDestroy_v2", "cuEventDestroy");
  if (driver.ctx_get_device != NULL && driver.event_create != NULL && driver.event_record != NULL &&
      driver.event_query != NULL && driver.event_elapsed_time != NULL &&
      driver.event_destroy != NULL) {
    vgpu_sm_set_state_resolver(resolve_state);
    vgpu_sm_init(&driver);
  }
  __atomic_store_n(&g_sm_ready, 1, __ATOMIC_RELEASE);
}

CUresult vgpu_limiter_before_launch(const struct vgpu_launch* launch) {
  if (__builtin_expect(!__atomic_load_n(&g_sm_ready, __ATOMIC_ACQUIRE), 0)) sm_ready();
  vgpu_sm_before_launch(launch->stream, launch->per_thread_stream);
  return CUDA_SUCCESS;
}

void vgpu_limiter_after_launch(const struct vgpu_launch* launch, CUresult result) {
  vgpu_sm_after_launch(launch->stream, launch->per_thread_stream, result);
}

void vgpu_limiter_before_sync(void) {
  /* Before the first launch nothing is open, and the limiter is not initialised yet. */
  if (__atomic_load_n(&g_sm_ready, __ATOMIC_ACQUIRE)) vgpu_sm_before_sync();
}

void vgpu_limiter_capture_begun(void) {
  vgpu_sm_capture_begun();
}

void vgpu_limiter_capture_ended(void) {
  vgpu_sm_capture_ended();
}
