#pragma once

// hami_build_info: the build of the exporting binary as labels on a constant 1, on every metrics
// page of the project (HAMi's name; its go_version label has no meaning for C++ and is left out).

#include "core/prom/exposition.h"

namespace vgpu::prom {

MetricFamily BuildInfoMetric();

}  // namespace vgpu::prom
