#include "env_config.h"

#include <stdio.h>
#include <string.h>

static int is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

int vgpu_parse_size(const char* text, uint64_t* out) {
  if (text == NULL) return -1;
  while (is_space(*text)) ++text;
  if (*text < '0' || *text > '9') return -1;
  uint64_t value = 0;
  for (; *text >= '0' && *text <= '9'; ++text) {
    const uint64_t digit = (uint64_t)(*text - '0');
    if (value > (UINT64_MAX - digit) / 10) return -1;
    value = value * 10 + digit;
  }
  unsigned shift = 0;
  switch (*text) {
    case 'k':
    case 'K':
      shift = 10;
      ++text;
      break;
    case 'm':
    case 'M':
      shift = 20;
      ++text;
      break;
    case 'g':
    case 'G':
      shift = 30;
      ++text;
      break;
    case 't':
    case 'T':
      shift = 40;
      ++text;
      break;
    default:
      break;
  }
  if (shift != 0 && (*text == 'i' || *text == 'I')) ++text; /* "Gi" */
  if (shift != 0 && (*text == 'b' || *text == 'B')) ++text; /* "GB", "GiB" */
  while (is_space(*text)) ++text;
  if (*text != '\0') return -1;
  if (shift != 0 && value > (UINT64_MAX >> shift)) return -1;
  *out = value << shift;
  return 0;
}

int vgpu_parse_mem_limit(const char* text, uint64_t* bytes, uint32_t* percent) {
  *bytes = 0;
  *percent = 0;
  if (text == NULL) return -1;
  const size_t len = strlen(text);
  if (len > 1 && len < 8 && text[len - 1] == '%') {
    unsigned p = 0;
    for (size_t i = 0; i + 1 < len; ++i) {
      if (text[i] < '0' || text[i] > '9') return -1;
      p = p * 10 + (unsigned)(text[i] - '0');
    }
    if (p == 0 || p > 100) return -1;
    *percent = p;
    return 0;
  }
  return vgpu_parse_size(text, bytes);
}

int vgpu_parse_bool(const char* text) {
  if (text == NULL) return 0;
  static const char* const kTrue[] = {"true", "1", "yes", "on"};
  for (size_t i = 0; i < sizeof(kTrue) / sizeof(kTrue[0]); ++i) {
    if (strcasecmp(text, kTrue[i]) == 0) return 1;
  }
  return 0;
}

static const char* lookup_indexed(vgpu_env_lookup lookup, void* ctx, const char* base, int index) {
  char name[64];
  snprintf(name, sizeof(name), "%s_%d", base, index);
  const char* value = lookup(name, ctx);
  if (value != NULL && value[0] != '\0') return value;
  value = lookup(base, ctx);
  return (value != NULL && value[0] != '\0') ? value : NULL;
}

int vgpu_read_limits(vgpu_env_lookup lookup, void* ctx, int count, struct vgpu_limits* out,
                     char* err, size_t err_len) {
  memset(out, 0, sizeof(*out));
  if (count > VGPU_REGION_MAX_DEVICES) count = VGPU_REGION_MAX_DEVICES;
  if (count < 0) count = 0;
  out->count = count;
  int rc = 0;
  if (err_len > 0) err[0] = '\0';
  for (int i = 0; i < count; ++i) {
    const char* mem = lookup_indexed(lookup, ctx, "CUDA_DEVICE_MEMORY_LIMIT", i);
    if (mem != NULL && vgpu_parse_mem_limit(mem, &out->mem_bytes[i], &out->mem_percent[i]) != 0) {
      if (rc == 0 && err_len > 0) {
        snprintf(err, err_len,
                 "invalid CUDA_DEVICE_MEMORY_LIMIT for device %d: '%s' (expected e.g. 4096m, 4g "
                 "or 50%%); device %d is not memory-limited",
                 i, mem, i);
      }
      rc = -1;
    }
    const char* sm = lookup_indexed(lookup, ctx, "CUDA_DEVICE_SM_LIMIT", i);
    uint64_t sm_value = 0;
    if (sm != NULL) {
      if (vgpu_parse_size(sm, &sm_value) != 0) {
        if (rc == 0 && err_len > 0) {
          snprintf(err, err_len,
                   "invalid CUDA_DEVICE_SM_LIMIT for device %d: '%s' (expected a percent 0-100)", i,
                   sm);
        }
        rc = -1;
        sm_value = 0;
      }
      out->sm_percent[i] = sm_value >= 100 ? 0 : (uint32_t)sm_value;
    }
  }
  return rc;
}

uint64_t vgpu_effective_limit(uint64_t bytes, uint32_t percent, uint64_t physical) {
  if (percent != 0) return physical / 100 * percent + (physical % 100) * percent / 100;
  return bytes;
}

int vgpu_split_visible_devices(const char* text, char tokens[][VGPU_REGION_UUID_LEN], int max) {
  if (text == NULL) return -1;
  int n = 0;
  const char* p = text;
  while (n < max) {
    while (is_space(*p)) ++p;
    const char* start = p;
    while (*p != '\0' && *p != ',') ++p;
    const char* end = p;
    while (end > start && is_space(end[-1])) --end;
    const size_t len = (size_t)(end - start);
    if (len == 0 || len >= VGPU_REGION_UUID_LEN) break;
    int valid = 1;
    if (start[0] >= '0' && start[0] <= '9') {
      for (size_t i = 0; i < len; ++i) valid &= (start[i] >= '0' && start[i] <= '9');
    } else {
      valid = (len > 4 && (strncmp(start, "GPU-", 4) == 0 || strncmp(start, "MIG-", 4) == 0));
    }
    if (!valid) break;
    memcpy(tokens[n], start, len);
    tokens[n][len] = '\0';
    ++n;
    if (*p != ',') break;
    ++p;
  }
  return n;
}

uint64_t vgpu_fake_total(uint64_t limit, uint64_t physical) {
  if (limit != 0 && (physical == 0 || limit < physical)) return limit;
  return physical;
}

uint64_t vgpu_fake_free(uint64_t limit, uint64_t physical, uint64_t real_free, uint64_t used) {
  uint64_t cap = vgpu_fake_total(limit, physical);
  /* What the card could still give us, expressed as a ceiling on our usage. */
  const uint64_t reachable = (real_free > UINT64_MAX - used) ? UINT64_MAX : used + real_free;
  if (limit != 0 && reachable < cap) cap = reachable;
  if (limit == 0) return real_free < cap ? real_free : cap;
  return cap > used ? cap - used : 0;
}

int vgpu_fits(uint64_t used, uint64_t request, uint64_t limit) {
  if (limit == 0) return 1;
  if (request > limit) return 0;
  return used <= limit - request;
}
