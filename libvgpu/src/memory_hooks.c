/* Hooks of every CUDA allocation path: reserve on the container's counter, call the driver, roll
 * back on failure; frees release exactly what the allocation reserved; destroying a context
 * releases what the driver freed with it. */
#include <cuda.h>
#include <stddef.h>

#include "admission.h"
#include "real_driver.h"
#include "state.h"

#define HIDDEN __attribute__((visibility("hidden")))
#define REAL(type, name) VGPU_REAL_CUDA(type, name)
#define MISSING CUDA_ERROR_NOT_FOUND

/* ---- linear allocations --------------------------------------------------------------------- */

typedef CUresult (*alloc_fn)(CUdeviceptr*, size_t);
HIDDEN CUresult vgpu_hook_cuMemAlloc_v3020(CUdeviceptr* dptr, size_t bytes) {
  alloc_fn real = REAL(alloc_fn, cuMemAlloc_v2);
  if (real == NULL) return MISSING;
  struct vgpu_admission a;
  CUresult rc = vgpu_admit_current(&a, bytes);
  if (rc != CUDA_SUCCESS) return rc;
  rc = real(dptr, bytes);
  vgpu_admission_finish_in_context(&a, rc, VGPU_ALLOC_LINEAR,
                                   rc == CUDA_SUCCESS ? (uint64_t)*dptr : 0);
  return rc;
}

typedef CUresult (*pitch_fn)(CUdeviceptr*, size_t*, size_t, size_t, unsigned);
HIDDEN CUresult vgpu_hook_cuMemAllocPitch_v3020(CUdeviceptr* dptr, size_t* pitch, size_t width,
                                                size_t height, unsigned elem) {
  pitch_fn real = REAL(pitch_fn, cuMemAllocPitch_v2);
  if (real == NULL) return MISSING;
  struct vgpu_admission a;
  /* Reserve the lower bound, then the padding the driver chose. */
  const uint64_t estimate =
      (width != 0 && height > UINT64_MAX / width) ? UINT64_MAX : (uint64_t)width * height;
  CUresult rc = vgpu_admit_current(&a, estimate);
  if (rc != CUDA_SUCCESS) return rc;
  rc = real(dptr, pitch, width, height, elem);
  if (rc == CUDA_SUCCESS && *pitch > width) {
    if (vgpu_admission_grow(&a, (uint64_t)(*pitch - width) * height) != 0) {
      typedef CUresult (*free_fn)(CUdeviceptr);
      free_fn real_free = REAL(free_fn, cuMemFree_v2);
      if (real_free != NULL) real_free(*dptr);
      rc = CUDA_ERROR_OUT_OF_MEMORY;
    }
  }
  vgpu_admission_finish_in_context(&a, rc, VGPU_ALLOC_LINEAR,
                                   rc == CUDA_SUCCESS ? (uint64_t)*dptr : 0);
  return rc;
}

typedef CUresult (*managed_fn)(CUdeviceptr*, size_t, unsigned);
HIDDEN CUresult vgpu_hook_cuMemAllocManaged_v6000(CUdeviceptr* dptr, size_t bytes, unsigned flags) {
  managed_fn real = REAL(managed_fn, cuMemAllocManaged);
  if (real == NULL) return MISSING;
  struct vgpu_admission a;
  CUresult rc = vgpu_admit_current(&a, bytes);
  if (rc != CUDA_SUCCESS) return rc;
  rc = real(dptr, bytes, flags);
  vgpu_admission_finish_in_context(&a, rc, VGPU_ALLOC_LINEAR,
                                   rc == CUDA_SUCCESS ? (uint64_t)*dptr : 0);
  return rc;
}

typedef CUresult (*free_fn)(CUdeviceptr);
HIDDEN CUresult vgpu_hook_cuMemFree_v3020(CUdeviceptr dptr) {
  free_fn real = REAL(free_fn, cuMemFree_v2);
  if (real == NULL) return MISSING;
  const CUresult rc = real(dptr);
  if (rc == CUDA_SUCCESS) vgpu_release_tracked(VGPU_ALLOC_LINEAR, (uint64_t)dptr);
  return rc;
}

/* ---- stream-ordered allocations ------------------------------------------------------------- */

typedef CUresult (*async_fn)(CUdeviceptr*, size_t, CUstream);
static CUresult alloc_async(async_fn real, CUdeviceptr* dptr, size_t bytes, CUstream stream) {
  if (real == NULL) return MISSING;
  struct vgpu_admission a;
  CUresult rc = vgpu_admit_current(&a, bytes);
  if (rc != CUDA_SUCCESS) return rc;
  rc = real(dptr, bytes, stream);
  vgpu_admission_finish(&a, rc, VGPU_ALLOC_LINEAR, rc == CUDA_SUCCESS ? (uint64_t)*dptr : 0);
  return rc;
}
HIDDEN CUresult vgpu_hook_cuMemAllocAsync_v11020(CUdeviceptr* dptr, size_t bytes, CUstream s) {
  return alloc_async(REAL(async_fn, cuMemAllocAsync), dptr, bytes, s);
}
HIDDEN CUresult vgpu_hook_cuMemAllocAsync_v11020_ptsz(CUdeviceptr* dptr, size_t bytes, CUstream s) {
  return alloc_async(REAL(async_fn, cuMemAllocAsync_ptsz), dptr, bytes, s);
}

typedef CUresult (*pool_fn)(CUdeviceptr*, size_t, CUmemoryPool, CUstream);
static CUresult alloc_pool(pool_fn real, CUdeviceptr* dptr, size_t bytes, CUmemoryPool pool,
                           CUstream stream) {
  if (real == NULL) return MISSING;
  struct vgpu_admission a;
  CUresult rc = vgpu_admit_current(&a, bytes);
  if (rc != CUDA_SUCCESS) return rc;
  rc = real(dptr, bytes, pool, stream);
  vgpu_admission_finish(&a, rc, VGPU_ALLOC_LINEAR, rc == CUDA_SUCCESS ? (uint64_t)*dptr : 0);
  return rc;
}
HIDDEN CUresult vgpu_hook_cuMemAllocFromPoolAsync_v11020(CUdeviceptr* dptr, size_t bytes,
                                                         CUmemoryPool pool, CUstream s) {
  return alloc_pool(REAL(pool_fn, cuMemAllocFromPoolAsync), dptr, bytes, pool, s);
}
HIDDEN CUresult vgpu_hook_cuMemAllocFromPoolAsync_v11020_ptsz(CUdeviceptr* dptr, size_t bytes,
                                                              CUmemoryPool pool, CUstream s) {
  return alloc_pool(REAL(pool_fn, cuMemAllocFromPoolAsync_ptsz), dptr, bytes, pool, s);
}

typedef CUresult (*free_async_fn)(CUdeviceptr, CUstream);
static CUresult free_async(free_async_fn real, CUdeviceptr dptr, CUstream stream) {
  if (real == NULL) return MISSING;
  const CUresult rc = real(dptr, stream);
  if (rc == CUDA_SUCCESS) vgpu_release_tracked(VGPU_ALLOC_LINEAR, (uint64_t)dptr);
  return rc;
}
HIDDEN CUresult vgpu_hook_cuMemFreeAsync_v11020(CUdeviceptr dptr, CUstream s) {
  return free_async(REAL(free_async_fn, cuMemFreeAsync), dptr, s);
}
HIDDEN CUresult vgpu_hook_cuMemFreeAsync_v11020_ptsz(CUdeviceptr dptr, CUstream s) {
  return free_async(REAL(free_async_fn, cuMemFreeAsync_ptsz), dptr, s);
}

/* ---- virtual memory management (PyTorch expandable segments) ------------------------------ */

typedef CUresult (*create_fn)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*,
                              unsigned long long);
HIDDEN CUresult vgpu_hook_cuMemCreate_v10020(CUmemGenericAllocationHandle* handle, size_t bytes,
                                             const CUmemAllocationProp* prop,
                                             unsigned long long flags) {
  create_fn real = REAL(create_fn, cuMemCreate);
  if (real == NULL) return MISSING;
  if (prop == NULL || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
    return real(handle, bytes, prop, flags); /* host memory: not the GPU's */
  }
  struct vgpu_admission a;
  CUresult rc = vgpu_admit_ordinal(&a, prop->location.id, bytes);
  if (rc != CUDA_SUCCESS) return rc;
  rc = real(handle, bytes, prop, flags);
  vgpu_admission_finish(&a, rc, VGPU_ALLOC_HANDLE, rc == CUDA_SUCCESS ? (uint64_t)*handle : 0);
  return rc;
}

typedef CUresult (*release_fn)(CUmemGenericAllocationHandle);
HIDDEN CUresult vgpu_hook_cuMemRelease_v10020(CUmemGenericAllocationHandle handle) {
  release_fn real = REAL(release_fn, cuMemRelease);
  if (real == NULL) return MISSING;
  const CUresult rc = real(handle);
  if (rc == CUDA_SUCCESS) vgpu_release_tracked(VGPU_ALLOC_HANDLE, (uint64_t)handle);
  return rc;
}

/* ---- arrays: counted at the size the driver reports ------------------------------------------ */

static uint64_t format_bytes(CUarray_format format) {
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

static uint64_t array_estimate(size_t w, size_t h, size_t d, CUarray_format f, unsigned ch) {
  const uint64_t hh = h ? h : 1;
  const uint64_t dd = d ? d : 1;
  return (uint64_t)w * hh * dd * format_bytes(f) * (ch ? ch : 1);
}

/* Replaces the estimate by the driver's number when it can tell (CUDA >= 11.6). */
static void settle_array(struct vgpu_admission* a, CUresult* rc, CUarray array, int mipmap,
                         CUmipmappedArray mm) {
  if (*rc != CUDA_SUCCESS || a->region_dev < 0) return;
  typedef CUresult (*req_fn)(CUDA_ARRAY_MEMORY_REQUIREMENTS*, void*, CUdevice);
  req_fn req = mipmap ? REAL(req_fn, cuMipmappedArrayGetMemoryRequirements)
                      : REAL(req_fn, cuArrayGetMemoryRequirements);
  CUDA_ARRAY_MEMORY_REQUIREMENTS r;
  if (req == NULL || req(&r, mipmap ? (void*)mm : (void*)array, a->ordinal) != CUDA_SUCCESS) {
    return;
  }
  if (r.size > a->bytes && vgpu_admission_grow(a, r.size - a->bytes) != 0) {
    typedef CUresult (*destroy_fn)(void*);
    destroy_fn destroy =
        mipmap ? REAL(destroy_fn, cuMipmappedArrayDestroy) : REAL(destroy_fn, cuArrayDestroy);
    if (destroy != NULL) destroy(mipmap ? (void*)mm : (void*)array);
    *rc = CUDA_ERROR_OUT_OF_MEMORY;
  } else if (r.size < a->bytes) {
    vgpu_admission_shrink(a, a->bytes - r.size);
  }
}

typedef CUresult (*array_fn)(CUarray*, const CUDA_ARRAY_DESCRIPTOR*);
HIDDEN CUresult vgpu_hook_cuArrayCreate_v3020(CUarray* handle, const CUDA_ARRAY_DESCRIPTOR* desc) {
  array_fn real = REAL(array_fn, cuArrayCreate_v2);
  if (real == NULL) return MISSING;
  if (desc == NULL) return real(handle, desc);
  struct vgpu_admission a;
  CUresult rc = vgpu_admit_current(
      &a, array_estimate(desc->Width, desc->Height, 1, desc->Format, desc->NumChannels));
  if (rc != CUDA_SUCCESS) return rc;
  rc = real(handle, desc);
  settle_array(&a, &rc, rc == CUDA_SUCCESS ? *handle : NULL, 0, NULL);
  vgpu_admission_finish_in_context(&a, rc, VGPU_ALLOC_ARRAY,
                                   rc == CUDA_SUCCESS ? (uint64_t)*handle : 0);
  return rc;
}

typedef CUresult (*array3d_fn)(CUarray*, const CUDA_ARRAY3D_DESCRIPTOR*);
HIDDEN CUresult vgpu_hook_cuArray3DCreate_v3020(CUarray* handle,
                                                const CUDA_ARRAY3D_DESCRIPTOR* desc) {
  array3d_fn real = REAL(array3d_fn, cuArray3DCreate_v2);
  if (real == NULL) return MISSING;
  if (desc == NULL) return real(handle, desc);
  struct vgpu_admission a;
  CUresult rc = vgpu_admit_current(
      &a, array_estimate(desc->Width, desc->Height, desc->Depth, desc->Format, desc->NumChannels));
  if (rc != CUDA_SUCCESS) return rc;
  rc = real(handle, desc);
  settle_array(&a, &rc, rc == CUDA_SUCCESS ? *handle : NULL, 0, NULL);
  vgpu_admission_finish_in_context(&a, rc, VGPU_ALLOC_ARRAY,
                                   rc == CUDA_SUCCESS ? (uint64_t)*handle : 0);
  return rc;
}

typedef CUresult (*array_destroy_fn)(CUarray);
HIDDEN CUresult vgpu_hook_cuArrayDestroy_v2000(CUarray array) {
  array_destroy_fn real = REAL(array_destroy_fn, cuArrayDestroy);
  if (real == NULL) return MISSING;
  const CUresult rc = real(array);
  if (rc == CUDA_SUCCESS) vgpu_release_tracked(VGPU_ALLOC_ARRAY, (uint64_t)(uintptr_t)array);
  return rc;
}

typedef CUresult (*mipmap_fn)(CUmipmappedArray*, const CUDA_ARRAY3D_DESCRIPTOR*, unsigned);
HIDDEN CUresult vgpu_hook_cuMipmappedArrayCreate_v5000(CUmipmappedArray* handle,
                                                       const CUDA_ARRAY3D_DESCRIPTOR* desc,
                                                       unsigned levels) {
  mipmap_fn real = REAL(mipmap_fn, cuMipmappedArrayCreate);
  if (real == NULL) return MISSING;
  if (desc == NULL) return real(handle, desc, levels);
  struct vgpu_admission a;
  /* All levels together take less than 4/3 of level 0 (2D) and 8/7 (3D): count 4/3. */
  const uint64_t base =
      array_estimate(desc->Width, desc->Height, desc->Depth, desc->Format, desc->NumChannels);
  CUresult rc = vgpu_admit_current(&a, levels > 1 ? base / 3 * 4 : base);
  if (rc != CUDA_SUCCESS) return rc;
  rc = real(handle, desc, levels);
  settle_array(&a, &rc, NULL, 1, rc == CUDA_SUCCESS ? *handle : NULL);
  vgpu_admission_finish_in_context(&a, rc, VGPU_ALLOC_MIPMAP,
                                   rc == CUDA_SUCCESS ? (uint64_t)*handle : 0);
  return rc;
}

typedef CUresult (*mipmap_destroy_fn)(CUmipmappedArray);
HIDDEN CUresult vgpu_hook_cuMipmappedArrayDestroy_v5000(CUmipmappedArray array) {
  mipmap_destroy_fn real = REAL(mipmap_destroy_fn, cuMipmappedArrayDestroy);
  if (real == NULL) return MISSING;
  const CUresult rc = real(array);
  if (rc == CUDA_SUCCESS) vgpu_release_tracked(VGPU_ALLOC_MIPMAP, (uint64_t)(uintptr_t)array);
  return rc;
}

/* ---- graph memory nodes: counted from the alloc node to its free node -------------------- */

typedef CUresult (*mem_node_fn)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
                                CUDA_MEM_ALLOC_NODE_PARAMS*);
HIDDEN CUresult vgpu_hook_cuGraphAddMemAllocNode_v11040(CUgraphNode* node, CUgraph graph,
                                                        const CUgraphNode* deps, size_t ndeps,
                                                        CUDA_MEM_ALLOC_NODE_PARAMS* params) {
  mem_node_fn real = REAL(mem_node_fn, cuGraphAddMemAllocNode);
  if (real == NULL) return MISSING;
  if (params == NULL || params->poolProps.location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
    return real(node, graph, deps, ndeps, params);
  }
  struct vgpu_admission a;
  CUresult rc = vgpu_admit_ordinal(&a, params->poolProps.location.id, params->bytesize);
  if (rc != CUDA_SUCCESS) return rc;
  rc = real(node, graph, deps, ndeps, params);
  vgpu_admission_finish(&a, rc, VGPU_ALLOC_LINEAR, rc == CUDA_SUCCESS ? (uint64_t)params->dptr : 0);
  return rc;
}

typedef CUresult (*free_node_fn)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t, CUdeviceptr);
HIDDEN CUresult vgpu_hook_cuGraphAddMemFreeNode_v11040(CUgraphNode* node, CUgraph graph,
                                                       const CUgraphNode* deps, size_t ndeps,
                                                       CUdeviceptr dptr) {
  free_node_fn real = REAL(free_node_fn, cuGraphAddMemFreeNode);
  if (real == NULL) return MISSING;
  const CUresult rc = real(node, graph, deps, ndeps, dptr);
  if (rc == CUDA_SUCCESS) vgpu_release_tracked(VGPU_ALLOC_LINEAR, (uint64_t)dptr);
  return rc;
}

/* ---- contexts: the driver frees a context's memory when the context goes away ------------- */

typedef CUresult (*ctx_destroy_fn)(CUcontext);
static CUresult destroy_context(ctx_destroy_fn real, CUcontext ctx) {
  if (real == NULL) return MISSING;
  const CUresult rc = real(ctx);
  if (rc == CUDA_SUCCESS) vgpu_release_context(ctx);
  return rc;
}
HIDDEN CUresult vgpu_hook_cuCtxDestroy_v2000(CUcontext ctx) {
  return destroy_context(REAL(ctx_destroy_fn, cuCtxDestroy), ctx);
}
HIDDEN CUresult vgpu_hook_cuCtxDestroy_v4000(CUcontext ctx) {
  return destroy_context(REAL(ctx_destroy_fn, cuCtxDestroy_v2), ctx);
}

/* The primary context of `dev` while it is active, else NULL. There is no getter: retain and
 * release it once more (no effect on an active context's lifetime). */
static CUcontext active_primary(CUdevice dev) {
  typedef CUresult (*state_fn)(CUdevice, unsigned*, int*);
  typedef CUresult (*retain_fn)(CUcontext*, CUdevice);
  typedef CUresult (*release_fn)(CUdevice);
  state_fn get_state = REAL(state_fn, cuDevicePrimaryCtxGetState);
  retain_fn retain = REAL(retain_fn, cuDevicePrimaryCtxRetain);
  release_fn release = REAL(release_fn, cuDevicePrimaryCtxRelease_v2);
  if (release == NULL) release = REAL(release_fn, cuDevicePrimaryCtxRelease);
  unsigned flags = 0;
  int active = 0;
  CUcontext ctx = NULL;
  if (get_state == NULL || retain == NULL || release == NULL ||
      get_state(dev, &flags, &active) != CUDA_SUCCESS || !active ||
      retain(&ctx, dev) != CUDA_SUCCESS) {
    return NULL;
  }
  (void)release(dev);
  return ctx;
}

typedef CUresult (*primary_fn)(CUdevice);
/* Release (only the last one destroys the context) and reset (always destroys it). */
static CUresult end_primary(primary_fn real, CUdevice dev) {
  if (real == NULL) return MISSING;
  CUcontext ctx = vgpu_state_cuda() == 0 ? active_primary(dev) : NULL;
  const CUresult rc = real(dev);
  if (rc == CUDA_SUCCESS && ctx != NULL && active_primary(dev) != ctx) vgpu_release_context(ctx);
  return rc;
}
HIDDEN CUresult vgpu_hook_cuDevicePrimaryCtxRelease_v7000(CUdevice dev) {
  return end_primary(REAL(primary_fn, cuDevicePrimaryCtxRelease), dev);
}
HIDDEN CUresult vgpu_hook_cuDevicePrimaryCtxRelease_v11000(CUdevice dev) {
  return end_primary(REAL(primary_fn, cuDevicePrimaryCtxRelease_v2), dev);
}
HIDDEN CUresult vgpu_hook_cuDevicePrimaryCtxReset_v7000(CUdevice dev) {
  return end_primary(REAL(primary_fn, cuDevicePrimaryCtxReset), dev);
}
HIDDEN CUresult vgpu_hook_cuDevicePrimaryCtxReset_v11000(CUdevice dev) {
  return end_primary(REAL(primary_fn, cuDevicePrimaryCtxReset_v2), dev);
}
