#include "core/prom/exposition.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/prom/build_info.h"

namespace vgpu::prom {
namespace {

TEST(Exposition, ValuesAreWrittenAsPrometheusReadsThem) {
  const struct {
    double v;
    const char* want;
  } cases[] = {{0, "0"},
               {30, "30"},
               {25165824000.0, "25165824000"},
               {0.3, "0.3"},
               {1.0 / 3, "0.3333333333333333"},
               {-2, "-2"},
               {std::numeric_limits<double>::infinity(), "+Inf"},
               {-std::numeric_limits<double>::infinity(), "-Inf"},
               {std::nan(""), "NaN"}};
  for (const auto& c : cases) EXPECT_EQ(FormatValue(c.v), c.want) << c.v;
}

TEST(Exposition, LabelValuesAreEscaped) {
  EXPECT_EQ(EscapeLabelValue("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  EXPECT_EQ(EscapeLabelValue("NVIDIA A10"), "NVIDIA A10");
}

TEST(Exposition, AFamilyRendersHelpTypeAndSamplesInOrder) {
  MetricFamily f("hami_x_bytes", "Bytes of x");
  f.Add({{"node", "n1"}, {"device_uuid", "GPU-1"}}, 1024);
  f.Add({}, 2);
  std::string out;
  f.Render(out);
  EXPECT_EQ(out,
            "# HELP hami_x_bytes Bytes of x\n# TYPE hami_x_bytes gauge\n"
            "hami_x_bytes{node=\"n1\",device_uuid=\"GPU-1\"} 1024\nhami_x_bytes 2\n");
  MetricFamily c("vgpu_y_total", "Count of y", MetricType::kCounter);
  EXPECT_TRUE(c.empty());
  std::string counter;
  c.Render(counter);
  EXPECT_EQ(counter, "# HELP vgpu_y_total Count of y\n# TYPE vgpu_y_total counter\n");
}

TEST(Exposition, BuildInfoIsOneSampleOfValueOneWithHamisLabels) {
  std::string out;
  BuildInfoMetric().Render(out);
  EXPECT_NE(out.find("# TYPE hami_build_info gauge\nhami_build_info{build_date=\""),
            std::string::npos)
      << out;
  for (const char* label :
       {"\",compiler=\"gcc ", "\",platform=\"linux/", "\",revision=\"", "\",version=\"v"}) {
    EXPECT_NE(out.find(label), std::string::npos) << label << "\n" << out;
  }
  EXPECT_EQ(out.substr(out.size() - 4), "} 1\n") << out;
}

}  // namespace
}  // namespace vgpu::prom
