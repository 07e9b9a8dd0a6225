#include "env_config.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "vgpu/env_contract.h"

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
    if (p > 100) return -1;
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

static const char* lookup_value(vgpu_env_lookup lookup, void* ctx, const char* name) {
  const char* value = lookup(name, ctx);
  return (value != NULL && value[0] != '\0') ? value : NULL;
}

/* `<base>_<index>` when set and not empty, else `<base>` when set and not empty, else NULL. */
static const char* lookup_indexed(vgpu_env_lookup lookup, void* ctx, const char* base, int index) {
  char name[64];
  snprintf(name, sizeof(name), "%s_%d", base, index);
  const char* value = lookup_value(lookup, ctx, name);
  return value != NULL ? value : lookup_value(lookup, ctx, base);
}

/* A whole number, digits only (spaces around allowed; a percent, milliseconds): 0 on success. */
static int parse_percent(const char* text, uint64_t* out) {
  while (is_space(*text)) ++text;
  if (*text < '0' || *text > '9') return -1;
  uint64_t value = 0;
  for (; *text >= '0' && *text <= '9'; ++text) {
    if (value < 1000000) value = value * 10 + (uint64_t)(*text - '0');
  }
  while (is_space(*text)) ++text;
  if (*text != '\0') return -1;
  *out = value;
  return 0;
}

/* 0 when `src` fits `dst` whole; -1 when it had to be cut (the cut text is kept, for messages). */
static int copy_text(char* dst, size_t len, const char* src) {
  return (size_t)snprintf(dst, len, "%s", src) < len ? 0 : -1;
}

/* A numeric macro as a string literal, for messages. */
#define TEXT_OF_(x) #x
#define TEXT_OF(x) TEXT_OF_(x)

/* Keeps the first problem only: one line is what a user reads. */
static int report(char* err, size_t err_len, int rc, const char* fmt, const char* name,
                  const char* value) {
  if (rc == 0 && err_len > 0) snprintf(err, err_len, fmt, name, value);
  return -1;
}

int vgpu_read_settings(vgpu_env_lookup lookup, void* ctx, int count, struct vgpu_settings* out,
                       char* err, size_t err_len) {
  memset(out, 0, sizeof(*out));
  if (count > VGPU_REGION_MAX_DEVICES) count = VGPU_REGION_MAX_DEVICES;
  if (count < 0) count = 0;
  out->count = count;
  int rc = 0;
  if (err_len > 0) err[0] = '\0';

  const char* policy = lookup_value(lookup, ctx, VGPU_ENV_CORE_POLICY);
  out->core_policy = VGPU_POLICY_DEFAULT;
  if (policy != NULL) {
    if (strcasecmp(policy, VGPU_CORE_POLICY_FORCE) == 0) {
      out->core_policy = VGPU_POLICY_FORCE;
    } else if (strcasecmp(policy, VGPU_CORE_POLICY_DISABLE) == 0) {
      out->core_policy = VGPU_POLICY_DISABLE;
    } else if (strcasecmp(policy, VGPU_CORE_POLICY_DEFAULT) != 0) {
      rc = report(err, err_len, rc,
                  "invalid %s: '%s' (expected default, force or disable); using default",
                  VGPU_ENV_CORE_POLICY, policy);
    }
  }
  /* An unknown mode keeps the time-slice limiter: a typo must not lift the compute limit. */
  const char* mode = lookup_value(lookup, ctx, VGPU_ENV_SHARING_MODE);
  if (mode != NULL) {
    if (strcasecmp(mode, VGPU_SHARING_MPS) == 0) {
      out->sharing_mps = 1;
    } else if (strcasecmp(mode, VGPU_SHARING_TIME_SLICE) != 0) {
      rc = report(err, err_len, rc,
                  "invalid %s: '%s' (expected " VGPU_SHARING_TIME_SLICE " or " VGPU_SHARING_MPS
                  "); the compute limit is enforced by time-slicing",
                  VGPU_ENV_SHARING_MODE, mode);
    }
  }
  const char* priority = lookup_value(lookup, ctx, VGPU_ENV_TASK_PRIORITY);
  out->priority = 1;
  if (priority != NULL) {
    if (strcmp(priority, "0") == 0) {
      out->priority = 0;
    } else if (strcmp(priority, "1") != 0) {
      rc = report(err, err_len, rc, "invalid %s: '%s' (expected 0 high or 1 low); using 1",
                  VGPU_ENV_TASK_PRIORITY, priority);
    }
  }

  for (int i = 0; i < count; ++i) {
    char name[64];
    const char* mem = lookup_indexed(lookup, ctx, VGPU_ENV_MEMORY_LIMIT, i);
    out->mem_limited[i] = mem != NULL;
    if (mem != NULL && vgpu_parse_mem_limit(mem, &out->mem_bytes[i], &out->mem_percent[i]) != 0) {
      /* Fail closed: a limit nobody can read is no memory, never all of it. */
      out->mem_bytes[i] = 0;
      out->mem_percent[i] = 0;
      snprintf(name, sizeof(name), "%s for device %d", VGPU_ENV_MEMORY_LIMIT, i);
      rc = report(err, err_len, rc,
                  "invalid %s: '%s' (expected bytes with an optional k/m/g/t suffix, e.g. 4096m or "
                  "4g, or a percent of the card, e.g. 50%%); every allocation on the device is "
                  "refused until it is fixed",
                  name, mem);
    }
    const char* sm = lookup_indexed(lookup, ctx, VGPU_ENV_SM_LIMIT, i);
    uint64_t sm_value = 0;
    if (sm != NULL && parse_percent(sm, &sm_value) != 0) {
      snprintf(name, sizeof(name), "%s for device %d", VGPU_ENV_SM_LIMIT, i);
      rc = report(err, err_len, rc,
                  "invalid %s: '%s' (expected a whole percent 0-100); the device is held at 1 %% "
                  "of the GPU until it is fixed",
                  name, sm);
      sm_value = 1; /* fail closed: the smallest limit, never unlimited */
    }
    out->sm_percent[i] =
        (sm_value >= 100 || out->core_policy == VGPU_POLICY_DISABLE) ? 0 : (uint32_t)sm_value;
  }

  out->oom_killer = vgpu_parse_bool(lookup(VGPU_ENV_OOM_KILLER, ctx));
  const char* stats = lookup_value(lookup, ctx, VGPU_ENV_SM_STATS);
  out->sm_stats =
      stats == NULL ? 0 : (strcmp(stats, "2") == 0 ? 2 : (strcmp(stats, "0") == 0 ? 0 : 1));
  const char* pause = lookup_value(lookup, ctx, VGPU_ENV_SM_ALONE_PAUSE);
  /* The pause between a lone saturating tenant's long stretches: what an H100's clock does after
   * it decides how much work a stretch gets done (sm/budget.h, docs/sm-limit.md). */
  uint64_t pause_ms = VGPU_SM_ALONE_PAUSE_DEFAULT_MS;
  if (pause != NULL &&
      (parse_percent(pause, &pause_ms) != 0 || pause_ms > VGPU_SM_ALONE_PAUSE_MAX_MS)) {
    rc = report(
        err, err_len, rc,
        "invalid %s: '%s' (expected 0-" TEXT_OF(VGPU_SM_ALONE_PAUSE_MAX_MS) " ms); using " TEXT_OF(
            VGPU_SM_ALONE_PAUSE_DEFAULT_MS),
        VGPU_ENV_SM_ALONE_PAUSE, pause);
    pause_ms = VGPU_SM_ALONE_PAUSE_DEFAULT_MS;
  }
  out->sm_alone_pause_ms = (int32_t)pause_ms;
  /* A path cut to fit would name another file (or directory, or library): never used. Messages
   * quote its start only (the line must fit what a user reads). */
  char head[48];
  const char* cache = lookup_value(lookup, ctx, VGPU_ENV_SHARED_CACHE);
  out->shared_cache_set = cache != NULL;
  if (copy_text(out->shared_cache, sizeof(out->shared_cache),
                cache != NULL ? cache : VGPU_DEFAULT_SHARED_CACHE) != 0) {
    out->shared_cache_too_long = 1;
    snprintf(head, sizeof(head), "%.40s", out->shared_cache);
    rc = report(err, err_len, rc,
                "invalid %s: '%s...' is longer than libvgpu keeps (511 bytes); the region is not "
                "used and GPU memory allocations are refused",
                VGPU_ENV_SHARED_CACHE, head);
  }
  const char* lock_dir = lookup_value(lookup, ctx, VGPU_ENV_LOCK_DIR);
  if (copy_text(out->lock_dir, sizeof(out->lock_dir),
                lock_dir != NULL ? lock_dir : VGPU_DEFAULT_LOCK_DIR) != 0) {
    snprintf(head, sizeof(head), "%.40s", out->lock_dir);
    rc =
        report(err, err_len, rc,
               "invalid %s: '%s...' is longer than libvgpu keeps (255 bytes); other tenants of the "
               "GPU are not seen (the SM limit holds, conservatively)",
               VGPU_ENV_LOCK_DIR, head);
    out->lock_dir[0] = '\0';
  }
  const char* cupti = lookup_value(lookup, ctx, VGPU_ENV_CUPTI_LIBRARY);
  if (copy_text(out->cupti_library, sizeof(out->cupti_library), cupti != NULL ? cupti : "") != 0) {
    snprintf(head, sizeof(head), "%.40s", out->cupti_library);
    rc = report(err, err_len, rc,
                "invalid %s: '%s...' is longer than libvgpu keeps (511 bytes); kernels are "
                "measured with CUDA events",
                VGPU_ENV_CUPTI_LIBRARY, head);
    copy_text(out->cupti_library, sizeof(out->cupti_library), "off");
  }
  return rc;
}

uint64_t vgpu_effective_limit(const struct vgpu_settings* s, int i, uint64_t physical) {
  if (i < 0 || i >= s->count || !s->mem_limited[i]) return VGPU_MEM_UNLIMITED;
  const uint32_t percent = s->mem_percent[i];
  if (percent != 0) return physical / 100 * percent + (physical % 100) * percent / 100;
  /* VGPU_MEM_UNLIMITED itself is no byte count anyone asks for: it stays a limit. */
  return s->mem_bytes[i] == VGPU_MEM_UNLIMITED ? VGPU_MEM_UNLIMITED - 1 : s->mem_bytes[i];
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
