/* The few NVML declarations libvgpu needs (no nvml.h ships with the CUDA toolkit headers). Values
 * and layouts are NVML's public ABI. */
#ifndef VGPU_NVML_TYPES_H_
#define VGPU_NVML_TYPES_H_

#include <stdint.h>

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st* nvmlDevice_t;

#define NVML_SUCCESS 0
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_FUNCTION_NOT_FOUND 13
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96

typedef struct {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;

typedef struct {
  unsigned int version;
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_v2_t;

typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlProcessInfo_v2_t;

#endif
