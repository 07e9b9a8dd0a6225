/* Pure parsing of libvgpu's environment contract (HAMi's, see docs/libvgpu.md). No I/O: the
 * caller passes a lookup function, so the rules are unit-tested with tables of cases. */
#ifndef VGPU_ENV_CONFIG_H_
#define VGPU_ENV_CONFIG_H_

#include <stddef.h>
#include <stdint.h>

#include "vgpu/region_layout.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Returns the value of `name` or NULL. */
typedef const char* (*vgpu_env_lookup)(const char* name, void* ctx);

/* "4096", "4g", "512M", "100k" (powers of 1024, case-insensitive). 0 on success, -1 when invalid
 * (empty, junk, overflow). */
int vgpu_parse_size(const char* text, uint64_t* out);

/* A memory limit value: a size, or "<p>%" of the physical memory (vgpu extension, 1..100).
 * On success sets exactly one of *bytes / *percent (the other 0). */
int vgpu_parse_mem_limit(const char* text, uint64_t* bytes, uint32_t* percent);

/* "true"/"1"/"yes"/"on" (any case) -> 1; anything else (and NULL) -> 0. */
int vgpu_parse_bool(const char* text);

/* Limits for the visible devices of this process, by ordinal. */
struct vgpu_limits {
  int count;                                     /* number of visible devices described */
  uint64_t mem_bytes[VGPU_REGION_MAX_DEVICES];   /* 0 = unlimited (or percent set) */
  uint32_t mem_percent[VGPU_REGION_MAX_DEVICES]; /* 0 = not a percentage */
  uint32_t sm_percent[VGPU_REGION_MAX_DEVICES];  /* 0 = unlimited */
};

/* Reads CUDA_DEVICE_MEMORY_LIMIT[_i] and CUDA_DEVICE_SM_LIMIT[_i] for `count` visible devices
 * (`_i` wins over the plain variable; SM >= 100 means unlimited). An invalid value is reported in
 * `err` (one line) and treated as unlimited for that device, returning -1; 0 when all valid. */
int vgpu_read_limits(vgpu_env_lookup lookup, void* ctx, int count, struct vgpu_limits* out,
                     char* err, size_t err_len);

/* Effective byte limit: percent of physical when a percentage was given, else bytes. */
uint64_t vgpu_effective_limit(uint64_t bytes, uint32_t percent, uint64_t physical);

/* Splits CUDA_VISIBLE_DEVICES into at most `max` tokens (indices, GPU-/MIG- UUIDs, or UUID
 * prefixes), trimming spaces. Parsing stops at the first empty or invalid token, as CUDA does.
 * Returns the number of tokens; -1 when the variable is unset (all devices visible). */
int vgpu_split_visible_devices(const char* text, char tokens[][VGPU_REGION_UUID_LEN], int max);

/* Free memory to report: max(0, min(limit, physical, used + real_free) - used), where limit 0 means
 * unlimited. Never underflows. */
uint64_t vgpu_fake_free(uint64_t limit, uint64_t physical, uint64_t real_free, uint64_t used);

/* Total memory to report: limit when set and below physical, else physical. */
uint64_t vgpu_fake_total(uint64_t limit, uint64_t physical);

/* Admission arithmetic: 1 when `used + request` fits under `limit` (0 = unlimited) without
 * overflow, else 0. */
int vgpu_fits(uint64_t used, uint64_t request, uint64_t limit);

#ifdef __cplusplus
}
#endif

#endif /* VGPU_ENV_CONFIG_H_ */
