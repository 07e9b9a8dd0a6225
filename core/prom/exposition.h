#pragma once

// Prometheus text exposition format (version 0.0.4), written by hand: one MetricFamily per name,
// its samples added in any order and rendered with `# HELP` and `# TYPE`. Every exporter of the
// project (scheduler, node monitor) writes through this, so escaping and number formatting have
// one home and `promtool check metrics` holds for all of them.

#include <string>
#include <utility>
#include <vector>

namespace vgpu::prom {

// Label value escaped for the text format (backslash, double quote, newline).
std::string EscapeLabelValue(const std::string& v);

// A sample value: integers without exponent or fraction, others with full precision; NaN and
// infinities as Prometheus spells them.
std::string FormatValue(double v);

using Labels = std::vector<std::pair<std::string, std::string>>;

enum class MetricType { kGauge, kCounter };

class MetricFamily {
 public:
  MetricFamily(std::string name, std::string help, MetricType type = MetricType::kGauge);

  void Add(const Labels& labels, double value);
  const std::string& name() const { return name_; }
  bool empty() const { return samples_.empty(); }
  // Appends `# HELP`, `# TYPE` and the samples to `out`. A family without samples still writes
  // its HELP and TYPE lines, so that a scrape shows what exists before anything is measured.
  void Render(std::string& out) const;

 private:
  std::string name_;
  std::string help_;
  MetricType type_;
  std::string samples_;
};

}  // namespace vgpu::prom
