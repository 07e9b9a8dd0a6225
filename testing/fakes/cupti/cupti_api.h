#pragma once

// CUPTI's own headers (CUDA 13) as the fake library sees them: the entry points it defines keep
// the real signatures and get default visibility; everything else in the library is hidden.

#pragma GCC visibility push(default)
#include <cupti_activity.h>
#include <cupti_callbacks.h>
#include <cupti_result.h>
#include <cupti_version.h>
#pragma GCC visibility pop
