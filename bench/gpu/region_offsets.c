/* Where the node monitor's per-device SM flag lives in a container's shared region file
 * (libvgpu/include/vgpu/region_layout.h), for the GPU scripts that drive it the way the node
 * monitor would (bench/gpu/sm_limit_flip.py). Prints one JSON line of byte offsets.
 *   gcc -Ilibvgpu/include bench/gpu/region_offsets.c -o region_offsets && ./region_offsets */
#include <stddef.h>
#include <stdio.h>

#include "vgpu/region_layout.h"

int main(void) {
  printf(
      "{\"magic\": %zu, \"device_count\": %zu, \"devices\": %zu, \"device_size\": %zu, "
      "\"uuid\": %zu, \"sm_limit_active\": %zu, \"expected_magic\": %llu}\n",
      offsetof(struct vgpu_region, header.magic), offsetof(struct vgpu_region, header.device_count),
      offsetof(struct vgpu_region, devices), sizeof(struct vgpu_region_device),
      offsetof(struct vgpu_region_device, uuid),
      offsetof(struct vgpu_region_device, sm_limit_active),
      (unsigned long long)VGPU_REGION_MAGIC);
  return 0;
}
