// cuInit, driver version, device enumeration and attributes, error strings.

#include <cstdio>
#include <cstring>

#include "../fake_topology.h"
#include "driver_state.h"

using namespace vgpu::fake;

namespace {

struct ErrorEntry {
  CUresult code;
  const char* name;
  const char* text;
};
constexpr ErrorEntry kErrors[] = {
#include "error_table.inc"
};

const ErrorEntry* FindError(CUresult code) {
  for (const auto& e : kErrors) {
    if (e.code == code) return &e;
  }
  return nullptr;
}

// Values of a Hopper H100 SXM5 (compute capability 9.0); SM count from the configuration.
bool AttributeValue(CUdevice_attribute attr, const GpuSpec& gpu, int physical, int* out) {
  switch (attr) {
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      *out = gpu.sms;
      return true;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      *out = 9;
      return true;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      *out = 0;
      return true;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE:
      *out = 1980000;
      return true;  // kHz
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE:
      *out = 2619000;
      return true;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH:
      *out = 5120;
      return true;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
      *out = 50 << 20;
      return true;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
      *out = 32;
      return true;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *out = 1024;
      return true;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
      *out = 2048;
      return true;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR:
      *out = 32;
      return true;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y:
      *out = 1024;
      return true;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z:
      *out = 64;
      return true;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:
      *out = 2147483647;
      return true;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z:
      *out = 65535;
      return true;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
      *out = 49152;
      return true;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
      *out = 232448;
      return true;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR:
      *out = 233472;
      return true;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK:
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR:
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY:
      *out = 65536;
      return true;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
      *out = static_cast<int>(PciBus(physical));
      return true;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID:
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID:
      *out = 0;
      return true;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS:
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS:
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH:
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
    case CU_DEVICE_ATTRIBUTE_ECC_ENABLED:
    case CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED:
      *out = 1;
      return true;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT:
      *out = 5;
      return true;
    case CU_DEVICE_ATTRIBUTE_INTEGRATED:
    case CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT:
    case CU_DEVICE_ATTRIBUTE_TCC_DRIVER:
      *out = 0;
      return true;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE:
      *out = CU_COMPUTEMODE_DEFAULT;
      return true;
    default:
      if (attr > 0 && attr < CU_DEVICE_ATTRIBUTE_MAX) {
        *out = 0;  // a valid attribute this fake does not model
        return true;
      }
      return false;
  }
}

}  // namespace

extern "C" {

CUresult cuInit(unsigned int flags) {
  auto& d = D();
  std::lock_guard<std::mutex> lock(d.mu);
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (d.init_done) return d.init_result;
  d.init_done = true;
  std::string error;
  auto cfg = LoadConfig(ProcessEnv, &error);
  if (!cfg) {
    (void)std::fprintf(stderr, "fake libcuda: %s\n", error.c_str());
    d.init_result = CUDA_ERROR_INVALID_VALUE;
    return d.init_result;
  }
  d.shared = SharedState::Open(cfg->state_dir, *cfg, &error);
  if (d.shared == nullptr) {
    (void)std::fprintf(stderr, "fake libcuda: %s\n", error.c_str());
    d.init_result = CUDA_ERROR_OPERATING_SYSTEM;
    return d.init_result;
  }
  d.config = std::move(*cfg);
  d.visible = VisibleDevices(ProcessEnv("CUDA_VISIBLE_DEVICES"), d.config);
  d.primary.assign(d.visible.size(), PrimaryContext{});
  d.default_pools.assign(d.visible.size(), nullptr);
  d.init_result = d.visible.empty() ? CUDA_ERROR_NO_DEVICE : CUDA_SUCCESS;
  return d.init_result;
}

CUresult cuDriverGetVersion(int* version) {
  if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *version = kCudaDriverVersion;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (auto rc = CheckDevice(ordinal); rc != CUDA_SUCCESS) return rc;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int* count) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *count = static_cast<int>(D().visible.size());
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckDevice(dev); rc != CUDA_SUCCESS) return rc;
  if (name == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  (void)std::snprintf(name, static_cast<size_t>(len), "%s", D().config.name.c_str());
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice dev) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckDevice(dev); rc != CUDA_SUCCESS) return rc;
  if (uuid == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(uuid->bytes, Gpu(PhysicalOf(dev)).uuid_bytes.data(), sizeof uuid->bytes);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) {
  return cuDeviceGetUuid_v2(uuid, dev);
}

CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckDevice(dev); rc != CUDA_SUCCESS) return rc;
  if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *bytes = Gpu(PhysicalOf(dev)).memory_bytes;
  return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem(unsigned int* bytes, CUdevice dev) {
  size_t full = 0;
  CUresult rc = cuDeviceTotalMem_v2(&full, dev);
  if (rc == CUDA_SUCCESS) *bytes = full > 0xFFFFFFFFU ? 0xFFFFFFFFU : static_cast<unsigned>(full);
  return rc;
}

CUresult cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckDevice(dev); rc != CUDA_SUCCESS) return rc;
  if (pi == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const int physical = PhysicalOf(dev);
  return AttributeValue(attrib, Gpu(physical), physical, pi) ? CUDA_SUCCESS
                                                             : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuDeviceGetPCIBusId(char* pciBusId, int len, CUdevice dev) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckDevice(dev); rc != CUDA_SUCCESS) return rc;
  if (pciBusId == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  (void)std::snprintf(pciBusId, static_cast<size_t>(len), "%s",
                      PciBusId(PhysicalOf(dev), false).c_str());
  return CUDA_SUCCESS;
}

CUresult cuGetErrorString(CUresult error, const char** pStr) {
  if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const ErrorEntry* e = FindError(error);
  *pStr = e != nullptr ? e->text : nullptr;
  return e != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorName(CUresult error, const char** pStr) {
  if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const ErrorEntry* e = FindError(error);
  *pStr = e != nullptr ? e->name : nullptr;
  return e != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

}  // extern "C"
