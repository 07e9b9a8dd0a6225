#pragma once

// Kubernetes label and field selectors, as the API server evaluates them.
// Labels: `k=v`, `k==v`, `k!=v`, `k`, `!k`, `k in (a,b)`, `k notin (a,b)`, comma = AND.
// Fields: `path=v`, `path==v`, `path!=v` where path is a dotted JSON path such as
// `spec.nodeName`, `status.phase`, `metadata.name` (a missing field compares as "").

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"

namespace vgpu::sim {

class Selector {
 public:
  enum class Op { kEq, kNotEq, kExists, kNotExists, kIn, kNotIn };
  struct Requirement {
    std::string key;
    Op op;
    std::vector<std::string> values;
  };

  static Result<Selector> ParseLabels(std::string_view text);
  static Result<Selector> ParseFields(std::string_view text);

  bool empty() const { return reqs_.empty(); }
  // Evaluates against the object: labels from metadata.labels, fields by path.
  bool Matches(const nlohmann::json& object) const;

 private:
  bool fields_ = false;
  std::vector<Requirement> reqs_;
};

}  // namespace vgpu::sim
