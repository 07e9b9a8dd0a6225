#pragma once

// kubelet's device-manager checkpoint (`kubelet_internal_checkpoint` in the device-plugin
// directory): the JSON record of every device allocation kubelet holds, written after each
// Allocate answer it accepts. Read by the device plugin to learn which pod an answer went to,
// because kubelet's Allocate request names no pod (core/allocate/misdelivered.h).
//
// Format (kubelet 1.20 and later; 1.19 and earlier wrote DeviceIDs as a plain list, also read):
//   {"Data":{"PodDeviceEntries":[{"PodUID":"…","ContainerName":"…","ResourceName":"…",
//     "DeviceIDs":{"<numa>":["id",…]},"AllocResp":"<base64 ContainerAllocateResponse>"}],
//     "RegisteredDevices":{…}},"Checksum":…}

#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"

namespace vgpu::codec {

struct KubeletDeviceEntry {
  std::string pod_uid;
  std::string container;
  std::string resource;
  std::vector<std::string> device_ids;
  std::string alloc_resp;  // the device plugin's answer: serialized ContainerAllocateResponse
};

// The entries in file order. InvalidArgument when the text is not such a checkpoint; an entry
// whose AllocResp is not base64 is an error too (the file is then not one kubelet wrote).
Result<std::vector<KubeletDeviceEntry>> DecodeKubeletCheckpoint(std::string_view json);

}  // namespace vgpu::codec
