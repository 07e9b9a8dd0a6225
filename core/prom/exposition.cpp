#include "core/prom/exposition.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace vgpu::prom {
namespace {

// HELP text escapes backslash and newline only (quotes stay as they are).
std::string EscapeHelp(const std::string& v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

// client_golang's order of the series of a family: fewer labels first, then label values
// compared pair by pair (labels already sorted by name).
bool SeriesBefore(const Labels& a, const Labels& b) {
  if (a.size() != b.size()) return a.size() < b.size();
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].second != b[i].second) return a[i].second < b[i].second;
  }
  return false;
}

// One sample line; `le` (a histogram bucket's bound) goes after the series' labels.
void AppendSample(std::string& lines, const std::string& name, const Labels& labels,
                  const std::string& value, const std::string* le = nullptr) {
  lines += name;
  if (!labels.empty() || le != nullptr) {
    lines += '{';
    bool first = true;
    for (const auto& [label, label_value] : labels) {
      if (!first) lines += ',';
      first = false;
      lines += label + "=\"" + EscapeLabelValue(label_value) + "\"";
    }
    if (le != nullptr) lines += std::string(first ? "" : ",") + "le=\"" + *le + "\"";
    lines += '}';
  }
  lines += ' ' + value + '\n';
}

}  // namespace

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

void MetricFamily::Add(Labels labels, double value) {
  std::stable_sort(labels.begin(), labels.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  Series s{std::move(labels), {}};
  AppendSample(s.lines, name_, s.labels, FormatValue(value));
  series_.push_back(std::move(s));
}

void MetricFamily::AddHistogram(Labels labels, std::span<const double> bounds,
                                std::span<const uint64_t> cumulative, double sum, uint64_t count) {
  std::stable_sort(labels.begin(), labels.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  Series s{std::move(labels), {}};
  const std::string bucket = name_ + "_bucket";
  for (size_t i = 0; i < bounds.size() && i < cumulative.size(); ++i) {
    const std::string le = FormatValue(bounds[i]);
    AppendSample(s.lines, bucket, s.labels, std::to_string(cumulative[i]), &le);
  }
  const std::string inf = "+Inf";
  AppendSample(s.lines, bucket, s.labels, std::to_string(count), &inf);
  AppendSample(s.lines, name_ + "_sum", s.labels, FormatValue(sum));
  AppendSample(s.lines, name_ + "_count", s.labels, std::to_string(count));
  series_.push_back(std::move(s));
}

void MetricFamily::Render(std::string& out) const {
  const char* type = type_ == MetricType::kCounter     ? " counter\n"
                     : type_ == MetricType::kHistogram ? " histogram\n"
                                                       : " gauge\n";
  out += "# HELP " + name_ + " " + EscapeHelp(help_) + "\n# TYPE " + name_ + type;
  std::vector<const Series*> order;
  order.reserve(series_.size());
  for (const Series& s : series_) order.push_back(&s);
  std::stable_sort(order.begin(), order.end(), [](const Series* a, const Series* b) {
    return SeriesBefore(a->labels, b->labels);
  });
  for (const Series* s : order) out += s->lines;
}

}  // namespace vgpu::prom
