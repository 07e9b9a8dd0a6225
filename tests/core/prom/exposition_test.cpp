#include "core/prom/exposition.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/prom/build_info.h"
#include "tests/core/prom/promtool_check.h"

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

TEST(Exposition, AFamilyRendersHelpTypeAndSeriesAsClientGolangDoes) {
  // Labels sorted by name; series sorted by label values, fewer labels first.
  MetricFamily f("hami_x_bytes", "Bytes of x");
  f.Add({{"node", "n2"}, {"device_uuid", "GPU-1"}}, 1024);
  f.Add({{"node", "n1"}, {"device_uuid", "GPU-2"}}, 0.5);
  f.Add({{"node", "n1"}, {"device_uuid", "GPU-1"}}, 3);
  f.Add({}, 2);
  std::string out;
  f.Render(out);
  EXPECT_EQ(out,
            "# HELP hami_x_bytes Bytes of x\n# TYPE hami_x_bytes gauge\n"
            "hami_x_bytes 2\n"
            "hami_x_bytes{device_uuid=\"GPU-1\",node=\"n1\"} 3\n"
            "hami_x_bytes{device_uuid=\"GPU-1\",node=\"n2\"} 1024\n"
            "hami_x_bytes{device_uuid=\"GPU-2\",node=\"n1\"} 0.5\n");
  MetricFamily c("vgpu_y_total", "Count of y", MetricType::kCounter);
  EXPECT_TRUE(c.empty());
  std::string counter;
  c.Render(counter);
  EXPECT_EQ(counter, "# HELP vgpu_y_total Count of y\n# TYPE vgpu_y_total counter\n");
}

TEST(Exposition, HelpTextIsEscaped) {
  MetricFamily f("x", "a \\ b\nc \"d\"");
  std::string out;
  f.Render(out);
  EXPECT_EQ(out, "# HELP x a \\\\ b\\nc \"d\"\n# TYPE x gauge\n");
}

TEST(Exposition, HistogramBucketsAreCumulativeWithLeLast) {
  MetricFamily h("vgpu_z_seconds", "Latency of z", MetricType::kHistogram);
  const double bounds[] = {0.001, 0.5};
  const uint64_t cumulative[] = {1, 3};
  h.AddHistogram({{"verb", "bind"}}, bounds, cumulative, 0.75, 4);
  h.AddHistogram({}, bounds, cumulative, 0.25, 3);
  std::string out;
  h.Render(out);
  EXPECT_EQ(out,
            "# HELP vgpu_z_seconds Latency of z\n# TYPE vgpu_z_seconds histogram\n"
            "vgpu_z_seconds_bucket{le=\"0.001\"} 1\n"
            "vgpu_z_seconds_bucket{le=\"0.5\"} 3\n"
            "vgpu_z_seconds_bucket{le=\"+Inf\"} 3\n"
            "vgpu_z_seconds_sum 0.25\n"
            "vgpu_z_seconds_count 3\n"
            "vgpu_z_seconds_bucket{verb=\"bind\",le=\"0.001\"} 1\n"
            "vgpu_z_seconds_bucket{verb=\"bind\",le=\"0.5\"} 3\n"
            "vgpu_z_seconds_bucket{verb=\"bind\",le=\"+Inf\"} 4\n"
            "vgpu_z_seconds_sum{verb=\"bind\"} 0.75\n"
            "vgpu_z_seconds_count{verb=\"bind\"} 4\n");
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

TEST(Exposition, PromtoolAcceptsEveryKindOfFamily) {
  const std::optional<testing::PromtoolResult> r = [] {
    std::string page;
    BuildInfoMetric().Render(page);
    MetricFamily g("vgpu_g_bytes", "A gauge with \\ and\na newline in its help");
    g.Add({{"zone", "vGPU"}, {"device_type", "NVIDIA \"A10\"\\x\ny"}}, 25165824000.0);
    g.Add({{"zone", "vGPU"}, {"device_type", "b"}}, 0.125);
    g.Render(page);
    MetricFamily c("vgpu_c_total", "A counter", MetricType::kCounter);
    c.Add({{"reason", "CardInsufficientMemory"}}, 3);
    c.Render(page);
    MetricFamily e("vgpu_e_total", "An empty counter", MetricType::kCounter);
    e.Render(page);
    MetricFamily h("vgpu_x_duration_seconds", "A histogram", MetricType::kHistogram);
    const double bounds[] = {0.0001, 0.25, 30};
    const uint64_t cumulative[] = {0, 2, 5};
    h.AddHistogram({}, bounds, cumulative, 12.5, 6);
    h.Render(page);
    return testing::PromtoolCheck(page);
  }();
  if (!r) GTEST_SKIP() << "promtool not installed (Debian package prometheus; install-deps.sh)";
  EXPECT_EQ(r->exit_code, 0) << r->output;
  EXPECT_TRUE(r->problems.empty()) << r->output;
}

}  // namespace
}  // namespace vgpu::prom
