#pragma once

// Node and pod JSON builders for scheduler tests.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace vgpu::scheduler::testing {

// A node with `gpus` GPUs named GPU-<node>-<i>, JSON inventory, `mem` MiB each, 10 slots. The
// type is as HAMi's device plugin (and ours) registers an A10: NVML's name, already "NVIDIA ...".
inline nlohmann::json GpuNode(const std::string& name, int gpus, int64_t mem = 24000,
                              const std::string& type = "NVIDIA A10") {
  nlohmann::json inv = nlohmann::json::array();
  for (int i = 0; i < gpus; ++i) {
    inv.push_back({{"id", "GPU-" + name + "-" + std::to_string(i)},
                   {"index", i},
                   {"count", 10},
                   {"devmem", mem},
                   {"devcore", 100},
                   {"type", type},
                   {"numa", 0},
                   {"mode", "hami-core"},
                   {"health", true}});
  }
  return {{"metadata",
           {{"name", name}, {"annotations", {{"hami.io/node-nvidia-register", inv.dump()}}}}}};
}

inline nlohmann::json GpuPod(const std::string& name, nlohmann::json limits,
                             const std::string& ns = "default",
                             nlohmann::json annotations = nlohmann::json::object()) {
  return {{"metadata",
           {{"name", name},
            {"namespace", ns},
            {"uid", "uid-" + ns + "-" + name},
            {"annotations", annotations}}},
          {"spec",
           {{"schedulerName", "hami-scheduler"},
            {"containers", {{{"name", "main"}, {"resources", {{"limits", limits}}}}}}}},
          {"status", {{"phase", "Pending"}}}};
}

inline nlohmann::json FilterArgs(const nlohmann::json& pod, const std::vector<std::string>& nodes) {
  return {{"pod", pod}, {"nodenames", nodes}};
}

inline nlohmann::json BindArgs(const nlohmann::json& pod, const std::string& node) {
  return {{"podName", pod["metadata"]["name"]},
          {"podNamespace", pod["metadata"]["namespace"]},
          {"podUID", pod["metadata"]["uid"]},
          {"node", node}};
}

}  // namespace vgpu::scheduler::testing
