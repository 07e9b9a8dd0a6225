// CUDA arrays, mipmapped arrays, modules and libraries (a library is a module loaded into the
// current context; its kernels are its functions, so a CUkernel can be launched as a CUfunction).
// Array size rule (documented in docs/fake-driver.md): width x max(height,1) x max(depth,1) x
// channels x element size, rounded up to 2 MiB; a mipmapped array sums its levels (each dimension
// halves, min 1) then rounds.

#include <unistd.h>

#include <algorithm>

#include "driver_state.h"

using namespace vgpu::fake;

namespace {

uint64_t ElementBytes(CUarray_format format) {
  switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
      return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
      return 2;
    default:
      return 4;
  }
}

uint64_t RoundUp(uint64_t v, uint64_t unit) {
  return (v + unit - 1) / unit * unit;
}

uint64_t ArrayBytes(const CUDA_ARRAY3D_DESCRIPTOR& d, unsigned levels) {
  uint64_t total = 0;
  uint64_t w = d.Width;
  uint64_t h = std::max<size_t>(d.Height, 1);
  uint64_t z = std::max<size_t>(d.Depth, 1);
  for (unsigned l = 0; l < std::max(levels, 1U); ++l) {
    total += w * h * z * d.NumChannels * ElementBytes(d.Format);
    w = std::max<uint64_t>(w / 2, 1);
    h = std::max<uint64_t>(h / 2, 1);
    z = std::max<uint64_t>(z / 2, 1);
  }
  return RoundUp(total, kGranularity);
}

bool ValidDescriptor(const CUDA_ARRAY3D_DESCRIPTOR* d) {
  return d != nullptr && d->Width > 0 &&
         (d->NumChannels == 1 || d->NumChannels == 2 || d->NumChannels == 4);
}

template <typename T>
CUresult CreateArray(Registry<T>& registry, T** out, const CUDA_ARRAY3D_DESCRIPTOR* desc,
                     unsigned levels) {
  std::lock_guard<std::mutex> lock(D().mu);
  CUctx_st* ctx = nullptr;
  if (auto rc = CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  if (out == nullptr || !ValidDescriptor(desc)) return CUDA_ERROR_INVALID_VALUE;
  const uint64_t bytes = ArrayBytes(*desc, levels);
  if (auto rc = Charge(ctx->physical, bytes); rc != CUDA_SUCCESS) return rc;
  auto a = std::make_unique<T>();
  a->ctx = ctx;
  a->bytes = bytes;
  *out = Adopt(registry, std::move(a));
  return CUDA_SUCCESS;
}

template <typename T>
CUresult DestroyArray(Registry<T>& registry, T* array) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (!Has(registry, array)) return CUDA_ERROR_INVALID_HANDLE;
  Uncharge(array->ctx->physical, array->bytes);
  registry.erase(array);
  return CUDA_SUCCESS;
}

CUresult LoadModule(CUmodule* module) {
  std::lock_guard<std::mutex> lock(D().mu);
  CUctx_st* ctx = nullptr;
  if (auto rc = CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  if (auto rc = Charge(ctx->physical, D().config.module_memory); rc != CUDA_SUCCESS) return rc;
  auto m = std::make_unique<CUmod_st>();
  m->ctx = ctx;
  *module = Adopt(D().modules, std::move(m));
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuArrayCreate_v2(CUarray* pHandle, const CUDA_ARRAY_DESCRIPTOR* desc) {
  if (desc == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUDA_ARRAY3D_DESCRIPTOR d3{};
  d3.Width = desc->Width;
  d3.Height = desc->Height;
  d3.Depth = 0;
  d3.Format = desc->Format;
  d3.NumChannels = desc->NumChannels;
  return CreateArray(D().arrays, pHandle, &d3, 1);
}

CUresult cuArray3DCreate_v2(CUarray* pHandle, const CUDA_ARRAY3D_DESCRIPTOR* desc) {
  return CreateArray(D().arrays, pHandle, desc, 1);
}

CUresult cuArrayDestroy(CUarray hArray) {
  return DestroyArray(D().arrays, hArray);
}

CUresult cuArrayGetMemoryRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS* req, CUarray array,
                                      CUdevice device) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckDevice(device); rc != CUDA_SUCCESS) return rc;
  if (req == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!Has(D().arrays, array)) return CUDA_ERROR_INVALID_HANDLE;
  *req = CUDA_ARRAY_MEMORY_REQUIREMENTS{};
  req->size = array->bytes;
  req->alignment = kGranularity;
  return CUDA_SUCCESS;
}

CUresult cuMipmappedArrayGetMemoryRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS* req,
                                               CUmipmappedArray mipmap, CUdevice device) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckDevice(device); rc != CUDA_SUCCESS) return rc;
  if (req == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!Has(D().mipmapped_arrays, mipmap)) return CUDA_ERROR_INVALID_HANDLE;
  *req = CUDA_ARRAY_MEMORY_REQUIREMENTS{};
  req->size = mipmap->bytes;
  req->alignment = kGranularity;
  return CUDA_SUCCESS;
}

CUresult cuMipmappedArrayCreate(CUmipmappedArray* pHandle, const CUDA_ARRAY3D_DESCRIPTOR* desc,
                                unsigned int numMipmapLevels) {
  if (numMipmapLevels == 0) return CUDA_ERROR_INVALID_VALUE;
  return CreateArray(D().mipmapped_arrays, pHandle, desc, numMipmapLevels);
}

CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray) {
  return DestroyArray(D().mipmapped_arrays, hMipmappedArray);
}

CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  if (module == nullptr || image == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return LoadModule(module);
}

CUresult cuModuleLoad(CUmodule* module, const char* fname) {
  if (module == nullptr || fname == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (access(fname, R_OK) != 0) return CUDA_ERROR_FILE_NOT_FOUND;
  return LoadModule(module);
}

CUresult cuModuleGetFunction(CUfunction* hfunc, CUmodule hmod, const char* name) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (hfunc == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!Has(D().modules, hmod)) return CUDA_ERROR_INVALID_HANDLE;
  auto& f = hmod->functions[name];
  if (!f) {
    f = std::make_unique<CUfunc_st>();
    f->module = hmod;
    f->name = name;
  }
  *hfunc = f.get();
  return CUDA_SUCCESS;
}

CUresult cuModuleUnload(CUmodule hmod) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (!Has(D().modules, hmod)) return CUDA_ERROR_INVALID_HANDLE;
  Uncharge(hmod->ctx->physical, D().config.module_memory);
  D().modules.erase(hmod);
  return CUDA_SUCCESS;
}

CUresult cuLibraryLoadData(CUlibrary* library, const void* code, CUjit_option* /*jitOptions*/,
                           void** /*jitOptionsValues*/, unsigned int /*numJitOptions*/,
                           CUlibraryOption* /*libraryOptions*/, void** /*libraryOptionValues*/,
                           unsigned int /*numLibraryOptions*/) {
  if (library == nullptr || code == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUmodule module = nullptr;
  CUresult rc = LoadModule(&module);
  if (rc == CUDA_SUCCESS) *library = reinterpret_cast<CUlibrary>(module);
  return rc;
}

CUresult cuLibraryGetKernel(CUkernel* pKernel, CUlibrary library, const char* name) {
  CUfunction f = nullptr;
  CUresult rc = cuModuleGetFunction(&f, reinterpret_cast<CUmodule>(library), name);
  if (rc == CUDA_SUCCESS) *pKernel = reinterpret_cast<CUkernel>(f);
  return rc;
}

CUresult cuLibraryUnload(CUlibrary library) {
  return cuModuleUnload(reinterpret_cast<CUmodule>(library));
}

CUresult cuKernelGetFunction(CUfunction* pFunc, CUkernel kernel) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (pFunc == nullptr || kernel == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pFunc = reinterpret_cast<CUfunction>(kernel);
  return CUDA_SUCCESS;
}

}  // extern "C"
