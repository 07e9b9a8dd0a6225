/* Pure parsing of libvgpu's environment contract (HAMi's, see docs/libvgpu.md). No I/O: the
 * caller passes a lookup function, so the rules are unit-tested with tables of cases. */
#ifndef VGPU_ENV_CONFIG_H_
#define VGPU_ENV_CONFIG_H_

#include <stddef.h>
#include <stdint.h>

#include "mem_arith.h"
#include "vgpu/region_layout.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Returns the value of `name` or NULL. */
typedef const char* (*vgpu_env_lookup)(const char* name, void* ctx);

/* "4096", "4g", "512M", "100k" (powers of 1024, case-insensitive). 0 on success, -1 when invalid
 * (empty, junk, overflow). */
int vgpu_parse_size(const char* text, uint64_t* out);

/* A memory limit value: a size, or "<p>%" of the physical memory (vgpu extension, 0..100).
 * On success sets at most one of *bytes / *percent (the other 0); "0", "0m" and "0%" are a limit
 * of 0 bytes. */
int vgpu_parse_mem_limit(const char* text, uint64_t* bytes, uint32_t* percent);

/* "true"/"1"/"yes"/"on" (any case) -> 1; anything else (and NULL) -> 0. */
int vgpu_parse_bool(const char* text);

/* GPU_CORE_UTILIZATION_POLICY, numbered as the region's sm_policy (vgpu/region_layout.h), which
 * stores it for the node monitor. */
enum vgpu_core_policy {
  /* limit while the node monitor says the GPU is shared (or says nothing) */
  VGPU_POLICY_DEFAULT = VGPU_SM_POLICY_DEFAULT,
  VGPU_POLICY_FORCE = VGPU_SM_POLICY_FORCE,     /* always limit */
  VGPU_POLICY_DISABLE = VGPU_SM_POLICY_DISABLE, /* never limit */
};

/* Everything libvgpu reads from the environment (env_contract.h), read once per process. */
struct vgpu_settings {
  int count; /* device ordinals described */
  /* 1: the device has a memory limit (bytes, or a percent of the card). An explicit 0 and a
   * malformed value are limits of 0 bytes (nothing may be allocated): never "unlimited". */
  int mem_limited[VGPU_REGION_MAX_DEVICES];
  uint64_t mem_bytes[VGPU_REGION_MAX_DEVICES];   /* when mem_percent is 0 */
  uint32_t mem_percent[VGPU_REGION_MAX_DEVICES]; /* 1..100; 0 = not a percentage */
  /* Percent of the card, 1..99; 0 = unlimited (unset, 0, >= 100, or policy disable). A malformed
   * value is the smallest limit, 1. */
  uint32_t sm_percent[VGPU_REGION_MAX_DEVICES];
  int32_t core_policy; /* enum vgpu_core_policy */
  int32_t priority;    /* CUDA_TASK_PRIORITY: 0 high, 1 low (default) */
  /* VGPU_SHARING_MODE=mps: an MPS client, whose SMs MPS partitions; the SM limiter stays off and
   * sm_percent is only recorded (the share MPS was given). Unknown values keep time-slice. */
  int sharing_mps;
  int oom_killer;            /* ACTIVE_OOM_KILLER */
  int sm_stats;              /* VGPU_SM_STATS: 0 off, 1 exit report */
  int32_t sm_alone_pause_ms; /* VGPU_SM_ALONE_PAUSE_MS: 0..1000 (env_contract.h) */
  int shared_cache_set;
  int shared_cache_too_long; /* the path did not fit: the region is unusable (fail closed) */
  char shared_cache[512];    /* CUDA_DEVICE_MEMORY_SHARED_CACHE or its default */
  char lock_dir[256];        /* VGPU_SM_PEER_DIR or /tmp/vgpulock; "" when it did not fit */
  char cupti_library[512]; /* VGPU_CUPTI_LIBRARY: "" = search, "off" = events only (or too long) */
};

/* Reads the contract for `count` device ordinals (clamped to VGPU_REGION_MAX_DEVICES).
 * `CUDA_DEVICE_*_LIMIT_<i>` wins over the plain variable when set and not empty (an empty value is
 * unset). Limits fail closed: a malformed memory limit ("lots", "-1", "1.5g", "101%", a number
 * that overflows) is a limit of 0 bytes, and a malformed SM percent (digits only: "30k", "30%",
 * "-5" are malformed) is the smallest limit, 1 %; neither ever means unlimited. A malformed value
 * is reported in `err` (the first one, one line naming the variable, the value, what was expected
 * and what holds meanwhile) and the function returns -1; the settings are still complete. */
int vgpu_read_settings(vgpu_env_lookup lookup, void* ctx, int count, struct vgpu_settings* out,
                       char* err, size_t err_len);

/* Device `i`'s byte limit on a card of `physical` bytes: the percentage of it when one was given,
 * else the bytes; VGPU_MEM_UNLIMITED (mem_arith.h) when the device has no memory limit. */
uint64_t vgpu_effective_limit(const struct vgpu_settings* s, int i, uint64_t physical);

/* Splits CUDA_VISIBLE_DEVICES into at most `max` tokens (indices, GPU-/MIG- UUIDs, or UUID
 * prefixes), trimming spaces. Parsing stops at the first empty or invalid token, as CUDA does.
 * Returns the number of tokens; -1 when the variable is unset (all devices visible). */
int vgpu_split_visible_devices(const char* text, char tokens[][VGPU_REGION_UUID_LEN], int max);

#ifdef __cplusplus
}
#endif

#endif /* VGPU_ENV_CONFIG_H_ */
