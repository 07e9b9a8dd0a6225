#pragma once

// GPU discovery and XID events through NVML, loaded with dlopen("libnvidia-ml.so.1") so the
// plugin binary runs (with --fake-gpus) on machines without a driver.

#include <memory>
#include <string>

#include "deviceplugin/gpu_backend.h"

namespace vgpu::deviceplugin {

// Fails with a clear message when the library or a required symbol is missing or init fails.
// `sysfs_root` is where /sys/bus/pci/devices/<busid>/numa_node is read (tests point it elsewhere).
Result<std::unique_ptr<GpuBackend>> OpenNvmlBackend(
    const std::string& library = "libnvidia-ml.so.1", const std::string& sysfs_root = "/sys");

// NUMA node of a PCI device from sysfs; 0 when unknown (-1 in sysfs, missing file), as HAMi.
int ReadNumaNode(const std::string& sysfs_root, const std::string& pci_bus_id);

}  // namespace vgpu::deviceplugin
