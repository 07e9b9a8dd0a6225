#define _GNU_SOURCE
#include "real_driver.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>

typedef void* (*dlsym_fn)(void*, const char*);

static dlsym_fn g_real_dlsym;
static void* g_cuda;
static void* g_nvml;
static int g_cuda_tried;
static int g_nvml_tried;
static pthread_mutex_t g_load_lock = PTHREAD_MUTEX_INITIALIZER;

/* `dlsym@GLIBC_2.2.5` exists in every glibc we support (in libdl before 2.34, kept as a compat
 * symbol in libc since), and dlvsym does not go through our exported dlsym. */
static dlsym_fn resolve_real_dlsym(void) {
  dlsym_fn fn = __atomic_load_n(&g_real_dlsym, __ATOMIC_ACQUIRE);
  if (fn == NULL) {
    fn = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    if (fn == NULL) fn = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    __atomic_store_n(&g_real_dlsym, fn, __ATOMIC_RELEASE);
  }
  return fn;
}

void* vgpu_real_dlsym(void* handle, const char* name) {
  dlsym_fn fn = resolve_real_dlsym();
  return fn != NULL ? fn(handle, name) : NULL;
}

static void* load(void** handle, int* tried, const char* file) {
  void* h = __atomic_load_n(handle, __ATOMIC_ACQUIRE);
  if (h != NULL || __atomic_load_n(tried, __ATOMIC_ACQUIRE)) return h;
  pthread_mutex_lock(&g_load_lock);
  if (!*tried) {
    h = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    __atomic_store_n(handle, h, __ATOMIC_RELEASE);
    __atomic_store_n(tried, 1, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&g_load_lock);
  return __atomic_load_n(handle, __ATOMIC_ACQUIRE);
}

void* vgpu_real_cuda(const char* name) {
  void* h = load(&g_cuda, &g_cuda_tried, "libcuda.so.1");
  return h != NULL ? vgpu_real_dlsym(h, name) : NULL;
}

void* vgpu_real_nvml(const char* name) {
  void* h = load(&g_nvml, &g_nvml_tried, "libnvidia-ml.so.1");
  return h != NULL ? vgpu_real_dlsym(h, name) : NULL;
}

void* vgpu_cached_cuda(void** cache, const char* name) {
  void* fn = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
  if (fn == NULL) {
    fn = vgpu_real_cuda(name);
    __atomic_store_n(cache, fn, __ATOMIC_RELEASE);
  }
  return fn;
}

void* vgpu_cached_nvml(void** cache, const char* name) {
  void* fn = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
  if (fn == NULL) {
    fn = vgpu_real_nvml(name);
    __atomic_store_n(cache, fn, __ATOMIC_RELEASE);
  }
  return fn;
}

/* ---- dlsym override ---------------------------------------------------------------------- */

void* vgpu_export_lookup(const char* name); /* exports.c */

static int is_driver_name(const char* name) {
  return name != NULL && ((name[0] == 'c' && name[1] == 'u') ||
                          (name[0] == 'n' && name[1] == 'v' && name[2] == 'm' && name[3] == 'l'));
}

static void* __attribute__((noinline)) dlsym_driver(void* handle, const char* name) {
  void* hook = vgpu_export_lookup(name);
  void* real = NULL;
  if ((handle == RTLD_NEXT || handle == RTLD_DEFAULT) && strncmp(name, "cupti", 5) == 0) {
    real = vgpu_real_dlsym(RTLD_NEXT, name); /* CUPTI, when the process loaded it globally */
  } else if (handle == RTLD_NEXT || handle == RTLD_DEFAULT) {
    real = name[0] == 'c' ? vgpu_real_cuda(name) : vgpu_real_nvml(name);
  } else {
    real = vgpu_real_dlsym(handle, name);
  }
  /* A symbol the library lacks stays missing: the caller sees what the driver would say. */
  return (hook != NULL && real != NULL) ? hook : real;
}

__attribute__((visibility("default"))) void* dlsym(void* handle, const char* name) {
  if (__builtin_expect(is_driver_name(name), 0)) return dlsym_driver(handle, name);
  /* Tail call (a jump at -O2): glibc finds the caller of RTLD_NEXT by the return address, which
   * thus stays the caller's. */
  return resolve_real_dlsym()(handle, name);
}
