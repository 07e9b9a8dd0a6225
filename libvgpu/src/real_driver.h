/* The real libcuda / libnvidia-ml, found lazily with dlopen the first time a hook needs them, and
 * glibc's own dlsym (ours is overridden). */
#ifndef VGPU_REAL_DRIVER_H_
#define VGPU_REAL_DRIVER_H_

/* glibc's dlsym, bound without going through our override. */
void* vgpu_real_dlsym(void* handle, const char* name);

/* Symbol of the real driver library, or NULL when the library or the symbol is missing. */
void* vgpu_real_cuda(const char* name);
void* vgpu_real_nvml(const char* name);

/* Resolves `name` once into *cache (thread-safe, lock-free). */
void* vgpu_cached_cuda(void** cache, const char* name);
void* vgpu_cached_nvml(void** cache, const char* name);

#define VGPU_REAL_CUDA(type, name)                 \
  ({                                               \
    static void* cache_##name;                     \
    (type) vgpu_cached_cuda(&cache_##name, #name); \
  })
#define VGPU_REAL_NVML(type, name)                 \
  ({                                               \
    static void* cache_##name;                     \
    (type) vgpu_cached_nvml(&cache_##name, #name); \
  })

#endif
