#include "core/prom/build_info.h"

#include "core/base/build_info.h"

namespace vgpu::prom {
namespace {

std::string Platform() {
#if defined(__x86_64__)
  return "linux/amd64";
#elif defined(__aarch64__)
  return "linux/arm64";
#else
  return "linux/unknown";
#endif
}

}  // namespace

MetricFamily BuildInfoMetric() {
  MetricFamily f("hami_build_info",
                 "Build of this binary as labels (version, revision, build date, compiler, "
                 "platform); the value is always 1");
  f.Add({{"build_date", build_info::kBuildDate},
         {"compiler", std::string("gcc ") + __VERSION__},
         {"platform", Platform()},
         {"revision", build_info::kGitCommit},
         {"version", std::string("v") + build_info::kVersion}},
        1);
  return f;
}

}  // namespace vgpu::prom
