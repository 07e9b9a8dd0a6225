#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "vgpu/env_contract.h"

static const char* const kNames[] = {"ERROR", "WARN", "INFO", "INFO", "DEBUG"};

static int log_level(void) {
  static int cached = -1; /* benign race: every thread computes the same value */
  int level = __atomic_load_n(&cached, __ATOMIC_RELAXED);
  if (level < 0) {
    const char* text = getenv(VGPU_ENV_LOG_LEVEL);
    level = (text != NULL && text[0] >= '0' && text[0] <= '9') ? atoi(text) : VGPU_LOG_WARN;
    __atomic_store_n(&cached, level, __ATOMIC_RELAXED);
  }
  return level;
}

void vgpu_log(int level, const char* fmt, ...) {
  if (level > log_level()) return;
  char line[512];
  int n = snprintf(line, sizeof(line), "[vgpu %s(pid %d)]: ", kNames[level > 4 ? 4 : level],
                   (int)getpid());
  if (n < 0) return;
  va_list args;
  va_start(args, fmt);
  int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, args);
  va_end(args);
  if (m < 0) return;
  size_t len = (size_t)n + (size_t)m;
  if (len > sizeof(line) - 2) len = sizeof(line) - 2;
  line[len++] = '\n';
  ssize_t rc = write(2, line, len);
  (void)rc;
}
