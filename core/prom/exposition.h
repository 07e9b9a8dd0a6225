#pragma once

// Prometheus text exposition format (version 0.0.4), written by hand: one MetricFamily per name,
// its series added in any order and rendered with `# HELP` and `# TYPE`. Every exporter of the
// project (scheduler, node monitor) writes through this, so escaping, number formatting and
// ordering have one home and `promtool check metrics` holds for all of them.
//
// The output is laid out as client_golang lays it out (HAMi's exporters), so that a page reads
// the same line for line: labels of a series sorted by name, series of a family sorted by their
// label values (fewer labels first), a histogram's `le` last.

#include <cstdint>
#include <span>
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

enum class MetricType { kGauge, kCounter, kHistogram };

class MetricFamily {
 public:
  MetricFamily(std::string name, std::string help, MetricType type = MetricType::kGauge);

  // One series of a gauge or counter family. Labels may come in any order.
  void Add(Labels labels, double value);
  // One series of a histogram family: `cumulative[i]` observations were <= `bounds[i]` (bounds
  // ascending, without +Inf; the +Inf bucket is `count`).
  void AddHistogram(Labels labels, std::span<const double> bounds,
                    std::span<const uint64_t> cumulative, double sum, uint64_t count);

  const std::string& name() const { return name_; }
  MetricType type() const { return type_; }
  bool empty() const { return series_.empty(); }
  // Appends `# HELP`, `# TYPE` and the series to `out`. A family without series still writes
  // its HELP and TYPE lines, so that a scrape shows what exists before anything is measured.
  void Render(std::string& out) const;

 private:
  struct Series {
    Labels labels;      // sorted by name
    std::string lines;  // the series' sample lines, each ending in '\n'
  };
  std::string name_;
  std::string help_;
  MetricType type_;
  std::vector<Series> series_;
};

}  // namespace vgpu::prom
