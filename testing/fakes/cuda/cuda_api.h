#pragma once

// cuda.h as the driver itself sees it: __CUDA_API_VERSION_INTERNAL removes the header's
// name remapping (cuMemAlloc -> cuMemAlloc_v2 ...) and declares the legacy and _ptsz entry
// points, so each exported symbol is defined under its real, versioned name. Declarations get
// default visibility; everything else in the library is hidden.

#define __CUDA_API_VERSION_INTERNAL 1
#pragma GCC visibility push(default)
#include <cuda.h>
#pragma GCC visibility pop
#define FAKE_EXPORT __attribute__((visibility("default")))
