// Node inventory (hami.io/node-nvidia-register): the JSON form (HAMi v2.8+) and the legacy text
// form, through the auto-detecting reader and each form's own reader. A JSON inventory that
// decodes survives a JSON round trip.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/codec/node_inventory.h"
#include "fuzz_check.h"

using vgpu::codec::DecodeInventory;
using vgpu::codec::DecodeInventoryJson;
using vgpu::codec::DecodeInventoryText;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)DecodeInventory(text);
  (void)DecodeInventoryText(text);
  auto inv = DecodeInventoryJson(text);
  if (!inv.ok()) return 0;
  const std::string encoded = vgpu::codec::EncodeInventoryJson(*inv);
  auto again = DecodeInventoryJson(encoded);
  vgpu::fuzz::Check(again.ok(), "re-encoded inventory does not decode", encoded);
  vgpu::fuzz::Check(*again == *inv, "JSON round trip changed the inventory", encoded);
  for (const auto& d : *inv) (void)vgpu::codec::NvidiaDeviceType(d.type);
  return 0;
}
