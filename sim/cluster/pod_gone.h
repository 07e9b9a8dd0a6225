#pragma once

// The simulated kubelet's rule for a pod it could not start: a pod deleted since it was handed
// to the kubelet (or replaced by another pod of its name) was dropped, not failed.

#include <nlohmann/json.hpp>

#include "core/base/status.h"

namespace vgpu::sim {

// `handed`: the pod as the kubelet got it; `now`: the API server's answer for its name now.
inline bool PodGoneSince(const nlohmann::json& handed, const Result<nlohmann::json>& now) {
  if (!now.ok()) return now.status().code() == StatusCode::kNotFound;
  const nlohmann::json meta = handed.value("metadata", nlohmann::json::object());
  const nlohmann::json now_meta = now->value("metadata", nlohmann::json::object());
  return now_meta.value("uid", "") != meta.value("uid", "") ||
         now_meta.contains("deletionTimestamp");
}

}  // namespace vgpu::sim
