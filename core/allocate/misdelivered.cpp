#include "core/allocate/misdelivered.h"

#include <algorithm>

namespace vgpu::allocate {

std::vector<OwedAnswer> MisdeliveredAnswers(const std::vector<KubeletAnswer>& answers,
                                            std::string_view resource) {
  auto held_by_owner = [&](const codec::ContainerDirName& c) {
    return std::any_of(answers.begin(), answers.end(), [&](const KubeletAnswer& a) {
      return a.resource == resource && a.holder_uid == c.pod_uid &&
             a.holder_container == c.container;
    });
  };
  std::vector<OwedAnswer> owed;
  for (const KubeletAnswer& a : answers) {
    if (a.resource != resource || !a.written_for || a.written_for->pod_uid == a.holder_uid) {
      continue;
    }
    const codec::ContainerDirName& c = *a.written_for;
    const bool seen = std::any_of(owed.begin(), owed.end(), [&](const OwedAnswer& o) {
      return o.pod_uid == c.pod_uid && o.container == c.container;
    });
    if (!seen && !held_by_owner(c)) {
      owed.push_back({c.pod_uid, c.container, a.holder_uid});
    }
  }
  return owed;
}

}  // namespace vgpu::allocate
