#define _GNU_SOURCE
#include "state.h"

#include <cuda.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "env_config.h"
#include "log.h"
#include "mps_probe.h"
#include "nvml_types.h"
#include "real_driver.h"
#include "sm_attach.h"
#include "vgpu/env_contract.h"

struct vgpu_state g_vgpu = {.lock = PTHREAD_MUTEX_INITIALIZER, .region = {.fd = -1, .slot = -1}};

#define LOAD(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

uint64_t vgpu_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The policy the region records for the monitor and `vgpu top`: MPS mode is shown as such (MPS
 * partitions the SMs; the time-slice policy does not apply). */
static uint32_t recorded_policy(const struct vgpu_settings* s) {
  return s->sharing_mps ? VGPU_SM_POLICY_MPS : (uint32_t)s->core_policy;
}

static const char* env_lookup(const char* name, void* ctx) {
  (void)ctx;
  return getenv(name);
}

static void read_settings_locked(void) {
  if (LOAD(&g_vgpu.settings_ready)) return;
  char err[256];
  if (vgpu_read_settings(env_lookup, NULL, VGPU_REGION_MAX_DEVICES, &g_vgpu.settings, err,
                         sizeof(err)) != 0) {
    VGPU_ERROR("%s", err);
  }
  if (g_vgpu.settings.sharing_mps) {
    const char* pipe = getenv(VGPU_ENV_MPS_PIPE_DIRECTORY);
    if (!vgpu_mps_daemon_answers(pipe)) {
      /* CUDA would run this process outside MPS with every SM: keep the time-slice limit. */
      VGPU_ERROR(
          "%s=%s but no MPS control daemon answers in %s: the compute limit is enforced by "
          "time-slicing",
          VGPU_ENV_SHARING_MODE, VGPU_SHARING_MPS,
          pipe != NULL && pipe[0] != '\0' ? pipe : VGPU_DEFAULT_MPS_PIPE_DIRECTORY);
      g_vgpu.settings.sharing_mps = 0;
    }
  }
  STORE(&g_vgpu.settings_ready, 1);
}

const struct vgpu_settings* vgpu_state_settings(void) {
  if (!LOAD(&g_vgpu.settings_ready)) {
    pthread_mutex_lock(&g_vgpu.lock);
    read_settings_locked();
    pthread_mutex_unlock(&g_vgpu.lock);
  }
  return &g_vgpu.settings;
}

static int any_limit(const struct vgpu_settings* s) {
  for (int i = 0; i < s->count; ++i) {
    if (s->mem_limited[i] || s->sm_percent[i] != 0) return 1;
  }
  return 0;
}

/* Opens the region once; called with g_vgpu.lock held. */
static void open_region_locked(void) {
  if (g_vgpu.region.region != NULL) return;
  read_settings_locked();
  const struct vgpu_settings* s = &g_vgpu.settings;
  g_vgpu.in_container_region = s->shared_cache_set;
  g_vgpu.oom_killer = s->oom_killer;
  if (!s->shared_cache_set && !any_limit(s)) {
    /* No container contract at all: track privately, create no file. */
    vgpu_region_open_private(&g_vgpu.region);
    return;
  }
  /* Without CUDA_DEVICE_MEMORY_SHARED_CACHE the default path is shared by every process of the
   * machine that has limits: the processes of one `vgpu run` or one plain LD_PRELOAD session. */
  if (s->shared_cache_too_long) {
    vgpu_region_open_private(&g_vgpu.region);
    g_vgpu.region.unusable_why =
        "its path is longer than libvgpu keeps (cut, it names another file)";
  } else {
    vgpu_region_open(s->shared_cache, &g_vgpu.region);
    /* Other processes of the container share this file: one that died is charged until the
     * driver has freed its memory. */
    vgpu_region_set_drain_probe(vgpu_nvml_still_holds);
  }
  vgpu_report_region_failure();
}

void vgpu_report_region_failure(void) {
  static int told;
  const char* why = vgpu_region_failure(&g_vgpu.region);
  if (why == NULL || __atomic_exchange_n(&told, 1, __ATOMIC_RELAXED) != 0) return;
  const struct vgpu_settings* s = &g_vgpu.settings;
  /* The path's start only: the line (512 bytes) must keep why and what to do. */
  VGPU_ERROR("shared region %.160s%s unusable: %s; %s", s->shared_cache,
             strlen(s->shared_cache) > 160 ? "..." : "", why,
             any_limit(s) ? VGPU_FAIL_CLOSED_ADVICE : "no limit is set, so nothing is refused");
}

int vgpu_refuses_memory(void) {
  const struct vgpu_region_handle* h = &g_vgpu.region;
  if (h->region == NULL || vgpu_region_failure(h) == NULL) return 0;
  return any_limit(vgpu_state_settings());
}

/* Our own copy of a record's key: the region's copy may be scribbled on (unterminated). */
static void remember_uuid(int rdev, const char* uuid) {
  if (rdev >= 0 && rdev < VGPU_REGION_MAX_DEVICES) {
    snprintf(g_vgpu.region_uuid[rdev], sizeof(g_vgpu.region_uuid[rdev]), "%s", uuid);
  }
}

static void after_fork_child(void) {
  /* The child shares the mapping but not the parent's slot or allocations. */
  pthread_mutex_init(&g_vgpu.lock, NULL);
  g_vgpu.region.slot = -1;
  vgpu_alloc_reset(&g_vgpu.table);
  vgpu_alloc_reset(&g_vgpu.ctx_owner);
}

void vgpu_ensure_slot(void) {
  if (__builtin_expect(g_vgpu.region.slot >= 0, 1) || g_vgpu.region.region == NULL) return;
  pthread_mutex_lock(&g_vgpu.lock);
  if (g_vgpu.region.slot < 0) {
    const int pid = (int)getpid();
    uint64_t start = 0;
    vgpu_proc_start_time(pid, &start);
    if (vgpu_region_claim_slot(&g_vgpu.region, pid, start, g_vgpu.settings.priority) != 0) {
      VGPU_ERROR(
          "shared region has no free process slot (%d in use); this process's usage is "
          "counted in the totals only",
          VGPU_REGION_MAX_PROCS);
    }
  }
  pthread_mutex_unlock(&g_vgpu.lock);
}

static void format_uuid(const CUuuid* u, char* out, size_t len) {
  const unsigned char* b = (const unsigned char*)u->bytes;
  snprintf(out, len, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
           b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
           b[14], b[15]);
}

int vgpu_state_cuda(void) {
  int ready = LOAD(&g_vgpu.cuda_ready);
  if (__builtin_expect(ready != 0, 1)) return ready == 1 ? 0 : -1;
  typedef CUresult (*init_fn)(unsigned);
  typedef CUresult (*count_fn)(int*);
  typedef CUresult (*get_fn)(CUdevice*, int);
  typedef CUresult (*uuid_fn)(CUuuid*, CUdevice);
  typedef CUresult (*total_fn)(size_t*, CUdevice);
  init_fn init = VGPU_REAL_CUDA(init_fn, cuInit);
  count_fn count = VGPU_REAL_CUDA(count_fn, cuDeviceGetCount);
  get_fn get = VGPU_REAL_CUDA(get_fn, cuDeviceGet);
  uuid_fn uuid = VGPU_REAL_CUDA(uuid_fn, cuDeviceGetUuid_v2);
  if (uuid == NULL) uuid = VGPU_REAL_CUDA(uuid_fn, cuDeviceGetUuid);
  total_fn total = VGPU_REAL_CUDA(total_fn, cuDeviceTotalMem_v2);
  if (init == NULL || count == NULL || get == NULL || uuid == NULL || total == NULL) return -1;
  if (init(0) != CUDA_SUCCESS) return -1; /* no driver/GPU: nothing to limit, pass through */

  pthread_mutex_lock(&g_vgpu.lock);
  ready = LOAD(&g_vgpu.cuda_ready);
  if (ready == 0) {
    open_region_locked();
    int n = 0;
    if (count(&n) != CUDA_SUCCESS) n = 0;
    if (n > VGPU_REGION_MAX_DEVICES) n = VGPU_REGION_MAX_DEVICES;
    const struct vgpu_settings* limits = &g_vgpu.settings;
    for (int i = 0; i < n; ++i) {
      g_vgpu.region_dev[i] = -1;
      CUdevice dev;
      CUuuid u;
      size_t bytes = 0;
      if (get(&dev, i) != CUDA_SUCCESS || uuid(&u, dev) != CUDA_SUCCESS ||
          total(&bytes, dev) != CUDA_SUCCESS) {
        continue;
      }
      char text[VGPU_REGION_UUID_LEN];
      format_uuid(&u, text, sizeof(text));
      const uint64_t limit = vgpu_effective_limit(limits, i, (uint64_t)bytes);
      g_vgpu.region_dev[i] =
          vgpu_region_register_device(&g_vgpu.region, text, (uint64_t)bytes, limit,
                                      limits->sm_percent[i], recorded_policy(limits));
      remember_uuid(g_vgpu.region_dev[i], text);
    }
    g_vgpu.device_count = n;
    pthread_atfork(NULL, NULL, after_fork_child);
    vgpu_sm_attach(); /* before any launch can see the CUDA side ready */
    STORE(&g_vgpu.cuda_ready, 1);
  }
  pthread_mutex_unlock(&g_vgpu.lock);
  vgpu_ensure_slot();
  return 0;
}

int vgpu_state_nvml(void) {
  if (LOAD(&g_vgpu.nvml_ready)) return 0;
  typedef nvmlReturn_t (*count_fn)(unsigned*);
  typedef nvmlReturn_t (*handle_fn)(unsigned, nvmlDevice_t*);
  typedef nvmlReturn_t (*uuid_fn)(nvmlDevice_t, char*, unsigned);
  typedef nvmlReturn_t (*mem_fn)(nvmlDevice_t, nvmlMemory_t*);
  count_fn count = VGPU_REAL_NVML(count_fn, nvmlDeviceGetCount_v2);
  handle_fn by_index = VGPU_REAL_NVML(handle_fn, nvmlDeviceGetHandleByIndex_v2);
  uuid_fn get_uuid = VGPU_REAL_NVML(uuid_fn, nvmlDeviceGetUUID);
  mem_fn mem = VGPU_REAL_NVML(mem_fn, nvmlDeviceGetMemoryInfo);
  if (count == NULL || by_index == NULL || get_uuid == NULL || mem == NULL) return -1;
  unsigned n = 0;
  if (count(&n) != NVML_SUCCESS) return -1;

  pthread_mutex_lock(&g_vgpu.lock);
  if (!LOAD(&g_vgpu.nvml_ready)) {
    open_region_locked();
    char uuids[VGPU_REGION_MAX_DEVICES][VGPU_REGION_UUID_LEN];
    nvmlDevice_t handles[VGPU_REGION_MAX_DEVICES];
    if (n > VGPU_REGION_MAX_DEVICES) n = VGPU_REGION_MAX_DEVICES;
    for (unsigned i = 0; i < n; ++i) {
      uuids[i][0] = '\0';
      if (by_index(i, &handles[i]) != NVML_SUCCESS ||
          get_uuid(handles[i], uuids[i], VGPU_REGION_UUID_LEN) != NVML_SUCCESS) {
        uuids[i][0] = '\0';
      }
    }
    /* The visible devices, in CUDA ordinal order: CUDA_VISIBLE_DEVICES by index or UUID. */
    int visible[VGPU_REGION_MAX_DEVICES];
    int nvis = 0;
    char tokens[VGPU_REGION_MAX_DEVICES][VGPU_REGION_UUID_LEN];
    const int ntok = vgpu_split_visible_devices(getenv(VGPU_ENV_VISIBLE_DEVICES), tokens,
                                                VGPU_REGION_MAX_DEVICES);
    if (ntok < 0) {
      for (unsigned i = 0; i < n; ++i) visible[nvis++] = (int)i;
    } else {
      for (int t = 0; t < ntok; ++t) {
        for (unsigned i = 0; i < n; ++i) {
          const int by_idx = tokens[t][0] >= '0' && tokens[t][0] <= '9';
          if ((by_idx && (unsigned)atoi(tokens[t]) == i) ||
              (!by_idx && strncmp(uuids[i], tokens[t], strlen(tokens[t])) == 0)) {
            visible[nvis++] = (int)i;
            break;
          }
        }
      }
    }
    const struct vgpu_settings* limits = &g_vgpu.settings;
    for (int v = 0; v < nvis; ++v) {
      const int i = visible[v];
      nvmlMemory_t m;
      if (uuids[i][0] == '\0' || mem(handles[i], &m) != NVML_SUCCESS) continue;
      const uint64_t limit = vgpu_effective_limit(limits, v, m.total);
      remember_uuid(vgpu_region_register_device(&g_vgpu.region, uuids[i], m.total, limit,
                                                limits->sm_percent[v], recorded_policy(limits)),
                    uuids[i]);
    }
    STORE(&g_vgpu.nvml_ready, 1);
  }
  pthread_mutex_unlock(&g_vgpu.lock);
  return 0;
}

int vgpu_region_dev_by_uuid(const char* uuid) {
  const struct vgpu_region* r = g_vgpu.region.region;
  if (r == NULL) return -1;
  const uint32_t count = vgpu_region_device_count(&g_vgpu.region);
  for (uint32_t d = 0; d < count; ++d) {
    if (strncmp(r->devices[d].uuid, uuid, VGPU_REGION_UUID_LEN) == 0) return (int)d;
  }
  return -1;
}

int vgpu_ordinal_region_dev(int ordinal) {
  if (vgpu_state_cuda() != 0 || ordinal < 0 || ordinal >= g_vgpu.device_count) return -1;
  return g_vgpu.region_dev[ordinal];
}

int vgpu_current_region_dev(int* ordinal) {
  typedef CUresult (*ctx_dev_fn)(CUdevice*);
  ctx_dev_fn ctx_dev = VGPU_REAL_CUDA(ctx_dev_fn, cuCtxGetDevice);
  CUdevice dev = -1;
  if (ctx_dev == NULL || ctx_dev(&dev) != CUDA_SUCCESS) return -1;
  if (ordinal != NULL) *ordinal = (int)dev;
  return vgpu_ordinal_region_dev((int)dev);
}

/* ---- reconciliation with the driver's per-process view ----------------------------------- */

/* 1 when NVML lists `pid` on the GPU `uuid` (its memory in `used`), 0 when the whole list lacks it,
 * -1 when NVML cannot tell. */
static int nvml_find_pid(const char* uuid, unsigned pid, uint64_t* used) {
  typedef nvmlReturn_t (*init_fn)(void);
  typedef nvmlReturn_t (*by_uuid_fn)(const char*, nvmlDevice_t*);
  typedef nvmlReturn_t (*procs_fn)(nvmlDevice_t, unsigned*, nvmlProcessInfo_v2_t*);
  static int inited;
  init_fn init = VGPU_REAL_NVML(init_fn, nvmlInit_v2);
  by_uuid_fn by_uuid = VGPU_REAL_NVML(by_uuid_fn, nvmlDeviceGetHandleByUUID);
  procs_fn procs = VGPU_REAL_NVML(procs_fn, nvmlDeviceGetComputeRunningProcesses_v3);
  if (procs == NULL) procs = VGPU_REAL_NVML(procs_fn, nvmlDeviceGetComputeRunningProcesses_v2);
  if (init == NULL || by_uuid == NULL || procs == NULL) return -1;
  if (!LOAD(&inited)) {
    if (init() != NVML_SUCCESS) return -1;
    STORE(&inited, 1);
  }
  nvmlDevice_t dev;
  if (by_uuid(uuid, &dev) != NVML_SUCCESS) return -1;
  nvmlProcessInfo_v2_t infos[256];
  unsigned n = 256;
  if (procs(dev, &n, infos) != NVML_SUCCESS) return -1;
  for (unsigned i = 0; i < n && i < 256; ++i) {
    if (infos[i].pid == pid) {
      *used = infos[i].usedGpuMemory;
      return 1;
    }
  }
  *used = 0;
  return n < 256 ? 0 : -1;
}

static int nvml_used_by_pid(const char* uuid, unsigned pid, uint64_t* used) {
  /* Not listed: the driver holds nothing for us on this device (e.g. our last context is gone). */
  return nvml_find_pid(uuid, pid, used) < 0 ? -1 : 0;
}

int vgpu_nvml_still_holds(const char* uuid, unsigned pid) {
  uint64_t used = 0;
  return nvml_find_pid(uuid, pid, &used);
}

/* 1 when the slot names a live process of this container: a pid > 0 (kill(-1) would signal every
 * process we may signal, kill(0) our process group) whose start time is the slot's. The region is
 * the container's to scribble on. */
static int slot_names_live_process(const struct vgpu_region_proc* slot, int pid) {
  if (pid <= 0) return 0;
  uint64_t start = 0;
  return vgpu_proc_start_time(pid, &start) == 0 && start == LOAD(&slot->start_time);
}

static void oom_kill(int rdev) {
  struct vgpu_region* r = g_vgpu.region.region;
  int victim = 0;
  uint64_t most = 0;
  for (int s = 0; s < VGPU_REGION_MAX_PROCS; ++s) {
    const int pid = LOAD(&r->procs[s].pid);
    const uint64_t used = LOAD(&r->procs[s].mem_used[rdev]);
    const uint64_t overhead = LOAD(&r->procs[s].mem_overhead[rdev]);
    const uint64_t mine = used > UINT64_MAX - overhead ? UINT64_MAX : used + overhead;
    if (pid > 0 && mine > most && slot_names_live_process(&r->procs[s], pid)) {
      most = mine;
      victim = pid;
    }
  }
  if (victim == 0) return;
  VGPU_ERROR(
      "ACTIVE_OOM_KILLER: device %s uses %llu bytes, above its limit of %llu; killing "
      "pid %d (%llu bytes)",
      g_vgpu.region_uuid[rdev], (unsigned long long)LOAD(&r->devices[rdev].mem_used),
      (unsigned long long)vgpu_region_limit(&r->devices[rdev]), victim, (unsigned long long)most);
  kill(victim, SIGKILL);
}

int vgpu_reconcile(int rdev, int force) {
  if (rdev < 0 || g_vgpu.region.slot < 0) return 0;
  struct vgpu_region* r = g_vgpu.region.region;
  /* The node monitor writing our host PID changes the entry to look for: measure at once. */
  static unsigned last_nvml_pid[VGPU_REGION_MAX_DEVICES];
  const unsigned nvml_pid = vgpu_region_nvml_pid(&r->procs[g_vgpu.region.slot]);
  const uint64_t now = vgpu_now_ns();
  const uint64_t last = LOAD(&g_vgpu.last_reconcile_ns[rdev]);
  if (!force && now - last < 1000000000ull && nvml_pid == LOAD(&last_nvml_pid[rdev])) return 0;
  STORE(&last_nvml_pid[rdev], nvml_pid);
  STORE(&g_vgpu.last_reconcile_ns[rdev], now);
  uint64_t used = 0;
  const int measured = nvml_used_by_pid(g_vgpu.region_uuid[rdev], nvml_pid, &used) == 0;
  if (measured) {
    const uint64_t tracked = LOAD(&r->procs[g_vgpu.region.slot].mem_used[rdev]);
    vgpu_region_set_overhead(&g_vgpu.region, rdev, used > tracked ? used - tracked : 0);
  }
  const uint64_t limit = vgpu_region_limit(&r->devices[rdev]);
  if (g_vgpu.oom_killer && limit != VGPU_MEM_UNLIMITED &&
      LOAD(&r->devices[rdev].mem_used) > limit) {
    oom_kill(rdev);
  }
  return measured;
}

void vgpu_reconcile_all(void) {
  if (LOAD(&g_vgpu.cuda_ready) != 1) return;
  for (int i = 0; i < g_vgpu.device_count; ++i) {
    if (g_vgpu.region_dev[i] >= 0) vgpu_reconcile(g_vgpu.region_dev[i], 1);
  }
}
