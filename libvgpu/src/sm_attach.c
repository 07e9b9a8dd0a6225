/* Hands the SM limiter (sm/sm_limit.h) what it needs, once, when the CUDA side of libvgpu is set
 * up: the settings read from the environment (env_config.h), the real driver's functions, and where
 * the container's per-device records sit in the region. */
#include "sm_attach.h"

#include <string.h>

#include "real_driver.h"
#include "sm/sm_limit.h"
#include "state.h"

_Static_assert(sizeof(((VgpuSmConfig*)0)->lock_dir) == sizeof(((struct vgpu_settings*)0)->lock_dir),
               "the settings' and the limiter's lock_dir are one size");
_Static_assert(sizeof(((VgpuSmConfig*)0)->cupti_library) ==
                   sizeof(((struct vgpu_settings*)0)->cupti_library),
               "the settings' and the limiter's cupti_library are one size");

static void* real_either(const char* name, const char* fallback) {
  void* fn = vgpu_real_cuda(name);
  return fn != NULL ? fn : vgpu_real_cuda(fallback);
}

void vgpu_sm_attach(void) {
  VgpuSmDriver driver;
  memset(&driver, 0, sizeof(driver));
  driver.ctx_get_device = (CUresult(*)(CUdevice*))vgpu_real_cuda("cuCtxGetDevice");
  driver.ctx_get_current = (CUresult(*)(CUcontext*))vgpu_real_cuda("cuCtxGetCurrent");
  driver.ctx_set_current = (CUresult(*)(CUcontext))vgpu_real_cuda("cuCtxSetCurrent");
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

  const struct vgpu_settings* s = &g_vgpu.settings;
  VgpuSmConfig config;
  memset(&config, 0, sizeof(config));
  config.device_count = g_vgpu.device_count;
  for (int i = 0; i < g_vgpu.device_count && i < VGPU_REGION_MAX_DEVICES; ++i) {
    /* MPS partitions the SMs of an MPS client: throttling it too would charge the share twice. */
    config.percent[i] = s->sharing_mps ? 0 : (int32_t)s->sm_percent[i];
    config.region_device[i] = g_vgpu.region_dev[i];
  }
  config.policy = s->core_policy;
  config.priority = s->priority;
  config.stats = s->sm_stats;
  config.alone_pause_ms = s->sm_alone_pause_ms;
  config.region = g_vgpu.region.region;
  config.region_slot = &g_vgpu.region.slot;
  memcpy(config.lock_dir, s->lock_dir, sizeof(config.lock_dir));
  memcpy(config.cupti_library, s->cupti_library, sizeof(config.cupti_library));
  vgpu_sm_init(&driver, &config);
}
