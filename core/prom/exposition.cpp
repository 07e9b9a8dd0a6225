#include "core/prom/exposition.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace vgpu::prom {

std::string EscapeLabelValue(const std::string& v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  if (v == std::trunc(v) && std::fabs(v) < 1e18) {
    (void)std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  // The shortest form that reads back as the same double (0.3, not 0.29999999999999999).
  for (int precision = 15; precision <= 17; ++precision) {
    (void)std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

MetricFamily::MetricFamily(std::string name, std::string help, MetricType type)
    : name_(std::move(name)), help_(std::move(help)), type_(type) {}

void MetricFamily::Add(const Labels& labels, double value) {
  samples_ += name_;
  if (!labels.empty()) {
    samples_ += '{';
    for (size_t i = 0; i < labels.size(); ++i) {
      if (i != 0) samples_ += ',';
      samples_ += labels[i].first + "=\"" + EscapeLabelValue(labels[i].second) + "\"";
    }
    samples_ += '}';
  }
  samples_ += ' ' + FormatValue(value) + '\n';
}

void MetricFamily::Render(std::string& out) const {
  out += "# HELP " + name_ + " " + help_ + "\n# TYPE " + name_ +
         (type_ == MetricType::kCounter ? " counter\n" : " gauge\n") + samples_;
}

}  // namespace vgpu::prom
