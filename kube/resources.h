#pragma once

// The Kubernetes resources vgpu talks to, and how their URLs are built.

#include <string>
#include <string_view>

namespace vgpu::kube {

struct ResourceType {
  std::string_view prefix;  // "/api/v1" or "/apis/<group>/<version>"
  std::string_view plural;
  bool namespaced;
};

inline constexpr ResourceType kPods{"/api/v1", "pods", true};
inline constexpr ResourceType kNodes{"/api/v1", "nodes", false};
inline constexpr ResourceType kEvents{"/api/v1", "events", true};
inline constexpr ResourceType kNamespaces{"/api/v1", "namespaces", false};
inline constexpr ResourceType kLeases{"/apis/coordination.k8s.io/v1", "leases", true};

// "/api/v1/namespaces/<ns>/pods[/<name>[/<sub>]]"; an empty `ns` of a namespaced type addresses
// all namespaces (lists and watches only).
std::string ResourcePath(const ResourceType& type, std::string_view ns, std::string_view name = "",
                         std::string_view subresource = "");

// Percent-encodes a query parameter value.
std::string UrlEncode(std::string_view s);

}  // namespace vgpu::kube
