/* NVML views: memory info shows the container's limit and usage; the process list shows only the
 * container's processes when a container region is configured. */
#include <string.h>

#include "env_config.h"
#include "mem_arith.h"
#include "nvml_types.h"
#include "real_driver.h"
#include "state.h"

#define HIDDEN __attribute__((visibility("hidden")))
#define REAL(type, name) VGPU_REAL_NVML(type, name)

/* Region record of an NVML device, or -1 (not one of the container's devices). */
static int region_dev_of(nvmlDevice_t device) {
  typedef nvmlReturn_t (*uuid_fn)(nvmlDevice_t, char*, unsigned);
  uuid_fn get_uuid = REAL(uuid_fn, nvmlDeviceGetUUID);
  char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
  if (get_uuid == NULL || get_uuid(device, uuid, sizeof(uuid)) != NVML_SUCCESS) return -1;
  if (vgpu_state_nvml() != 0) return -1;
  return vgpu_region_dev_by_uuid(uuid);
}

/* The record's limit, VGPU_MEM_UNLIMITED when there is none. */
static uint64_t limit_of(int rdev) {
  return vgpu_region_limit(&g_vgpu.region.region->devices[rdev]);
}

/* The container's view of a limited device (an unlimited one keeps the card's own numbers). */
static void fake_memory(int rdev, unsigned long long* total, unsigned long long* free_bytes,
                        unsigned long long* used) {
  const uint64_t limit = limit_of(rdev);
  const uint64_t physical = *total;
  const uint64_t mine = vgpu_region_device_used(&g_vgpu.region, rdev);
  const uint64_t cap = vgpu_fake_total(limit, physical);
  *total = cap;
  *used = mine < cap ? mine : cap;
  *free_bytes = vgpu_refuses_memory() ? 0 : vgpu_fake_free(limit, physical, *free_bytes, mine);
}

typedef nvmlReturn_t (*mem_fn)(nvmlDevice_t, nvmlMemory_t*);
HIDDEN nvmlReturn_t vgpu_hook_nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  mem_fn real = REAL(mem_fn, nvmlDeviceGetMemoryInfo);
  if (real == NULL) return NVML_ERROR_FUNCTION_NOT_FOUND;
  const nvmlReturn_t rc = real(device, memory);
  if (rc != NVML_SUCCESS || memory == NULL) return rc;
  const int rdev = region_dev_of(device);
  if (rdev >= 0 && limit_of(rdev) != VGPU_MEM_UNLIMITED) {
    fake_memory(rdev, &memory->total, &memory->free, &memory->used);
  }
  return rc;
}

typedef nvmlReturn_t (*mem_v2_fn)(nvmlDevice_t, nvmlMemory_v2_t*);
HIDDEN nvmlReturn_t vgpu_hook_nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device,
                                                         nvmlMemory_v2_t* memory) {
  mem_v2_fn real = REAL(mem_v2_fn, nvmlDeviceGetMemoryInfo_v2);
  if (real == NULL) return NVML_ERROR_FUNCTION_NOT_FOUND;
  const nvmlReturn_t rc = real(device, memory);
  if (rc != NVML_SUCCESS || memory == NULL) return rc;
  const int rdev = region_dev_of(device);
  if (rdev >= 0 && limit_of(rdev) != VGPU_MEM_UNLIMITED) {
    fake_memory(rdev, &memory->total, &memory->free, &memory->used);
    memory->reserved = 0; /* driver-reserved memory is outside the container's view */
  }
  return rc;
}

/* The container's PID of an NVML entry's PID (a host PID in a container with its own PID
 * namespace, once the node monitor has matched it), 0 when no process of the container has it. */
static unsigned container_pid(unsigned nvml_pid) {
  const struct vgpu_region* r = g_vgpu.region.region;
  for (int s = 0; s < VGPU_REGION_MAX_PROCS; ++s) {
    const unsigned pid = (unsigned)__atomic_load_n(&r->procs[s].pid, __ATOMIC_ACQUIRE);
    if (pid != 0 && vgpu_region_nvml_pid(&r->procs[s]) == nvml_pid) return pid;
  }
  return 0;
}

/* Keeps the entries of the container's processes, with the PIDs the container knows them by. */
#define FILTER_PROCESSES(infos, count)                    \
  do {                                                    \
    unsigned kept = 0;                                    \
    for (unsigned i = 0; i < *(count); ++i) {             \
      const unsigned own = container_pid((infos)[i].pid); \
      if (own == 0) continue;                             \
      (infos)[kept] = (infos)[i];                         \
      (infos)[kept++].pid = own;                          \
    }                                                     \
    *(count) = kept;                                      \
  } while (0)

static int should_filter(nvmlDevice_t device) {
  return region_dev_of(device) >= 0 && g_vgpu.in_container_region && !g_vgpu.region.is_private;
}

typedef nvmlReturn_t (*procs_v1_fn)(nvmlDevice_t, unsigned*, nvmlProcessInfo_v1_t*);
HIDDEN nvmlReturn_t vgpu_hook_nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device,
                                                                   unsigned* count,
                                                                   nvmlProcessInfo_v1_t* infos) {
  procs_v1_fn real = REAL(procs_v1_fn, nvmlDeviceGetComputeRunningProcesses);
  if (real == NULL) return NVML_ERROR_FUNCTION_NOT_FOUND;
  const nvmlReturn_t rc = real(device, count, infos);
  if (rc == NVML_SUCCESS && infos != NULL && count != NULL && should_filter(device)) {
    FILTER_PROCESSES(infos, count);
  }
  return rc;
}

typedef nvmlReturn_t (*procs_v2_fn)(nvmlDevice_t, unsigned*, nvmlProcessInfo_v2_t*);
static nvmlReturn_t procs_v2(procs_v2_fn real, nvmlDevice_t device, unsigned* count,
                             nvmlProcessInfo_v2_t* infos) {
  if (real == NULL) return NVML_ERROR_FUNCTION_NOT_FOUND;
  const nvmlReturn_t rc = real(device, count, infos);
  if (rc == NVML_SUCCESS && infos != NULL && count != NULL && should_filter(device)) {
    FILTER_PROCESSES(infos, count);
  }
  return rc;
}
HIDDEN nvmlReturn_t vgpu_hook_nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device,
                                                                      unsigned* count,
                                                                      nvmlProcessInfo_v2_t* infos) {
  return procs_v2(REAL(procs_v2_fn, nvmlDeviceGetComputeRunningProcesses_v2), device, count, infos);
}
HIDDEN nvmlReturn_t vgpu_hook_nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device,
                                                                      unsigned* count,
                                                                      nvmlProcessInfo_v2_t* infos) {
  return procs_v2(REAL(procs_v2_fn, nvmlDeviceGetComputeRunningProcesses_v3), device, count, infos);
}
