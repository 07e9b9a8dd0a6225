/* The observer of tests/gpu/exit_race.sh (run without libvgpu): for `seconds`, samples as fast as
 * it can (a few thousand times a second) device 0's memory as the driver reports it, and the
 * container's total in its region file, and prints the largest of each:
 *   peak processes=<MiB: sum of NVML's per-process used memory> device=<MiB: NVML used minus the
 *   idle baseline> region=<MiB: the region's devices[0].mem_used> samples=<n>
 * Build: gcc -O2 -I<repo>/libvgpu/include exit_race_sampler.c -ldl */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "vgpu/region_layout.h"

typedef struct {
  unsigned long long total, free, used;
} nvml_memory;
typedef struct {
  unsigned pid;
  unsigned long long used;
  unsigned gi, ci;
} nvml_process; /* nvmlProcessInfo_v2_t */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: exit_race_sampler REGION_FILE SECONDS\n");
    return 2;
  }
  void* nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW);
  if (nvml == NULL) {
    fprintf(stderr, "no libnvidia-ml.so.1\n");
    return 1;
  }
  int (*init)(void) = (int (*)(void))dlsym(nvml, "nvmlInit_v2");
  int (*handle)(unsigned, void**) =
      (int (*)(unsigned, void**))dlsym(nvml, "nvmlDeviceGetHandleByIndex_v2");
  int (*mem)(void*, nvml_memory*) =
      (int (*)(void*, nvml_memory*))dlsym(nvml, "nvmlDeviceGetMemoryInfo");
  int (*procs)(void*, unsigned*, nvml_process*) = (int (*)(void*, unsigned*, nvml_process*))dlsym(
      nvml, "nvmlDeviceGetComputeRunningProcesses_v3");
  void* dev = NULL;
  if (init == NULL || handle == NULL || mem == NULL || procs == NULL || init() != 0 ||
      handle(0, &dev) != 0) {
    fprintf(stderr, "NVML unusable\n");
    return 1;
  }
  nvml_memory m;
  if (mem(dev, &m) != 0) return 1;
  const unsigned long long idle = m.used;
  const struct vgpu_region* region = NULL;
  unsigned long long peak_procs = 0, peak_device = 0, peak_region = 0, samples = 0;
  static nvml_process list[256];
  const double end = now_s() + atof(argv[2]);
  while (now_s() < end) {
    if (region == NULL) { /* mapped once laid out: a page past a file's end would fault */
      struct stat st;
      const int fd = open(argv[1], O_RDONLY);
      if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size == (off_t)sizeof(struct vgpu_region)) {
        void* p = mmap(NULL, sizeof(struct vgpu_region), PROT_READ, MAP_SHARED, fd, 0);
        if (p != MAP_FAILED) region = p;
      }
      if (fd >= 0) close(fd);
    }
    unsigned n = 256;
    if (procs(dev, &n, list) == 0) {
      unsigned long long sum = 0;
      for (unsigned i = 0; i < n && i < 256; ++i) sum += list[i].used;
      if (sum > peak_procs) peak_procs = sum;
    }
    if (mem(dev, &m) == 0 && m.used > idle && m.used - idle > peak_device)
      peak_device = m.used - idle;
    if (region != NULL) {
      const uint64_t total = __atomic_load_n(&region->devices[0].mem_used, __ATOMIC_RELAXED);
      if (total > peak_region) peak_region = total;
    }
    ++samples;
  }
  printf("peak processes=%llu device=%llu region=%llu samples=%llu\n", peak_procs >> 20,
         peak_device >> 20, peak_region >> 20, samples);
  return 0;
}
