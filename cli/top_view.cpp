#include "cli/top_view.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <set>
#include <tuple>

#include "core/base/strings.h"

namespace vgpu::cli::top {
namespace {

using monitor::ContainerGpuView;
using monitor::ContainerState;
using monitor::ContainerStatusView;
using monitor::GpuView;
using monitor::NodeSnapshot;

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr const char* kEllipsis = "…";
constexpr const char* kUnlimited = "∞";
constexpr const char* kMissing = "-";
constexpr std::string_view kIndent = "  ";

// Below this the name column stops shrinking; the line is cut at the terminal's edge instead,
// which loses the right-hand columns but keeps the rows identifiable.
constexpr size_t kMinNameWidth = 12;

bool IsContinuationByte(char c) {
  return (static_cast<unsigned char>(c) & 0xC0) == 0x80;
}

// ANSI SGR codes the view writes with ViewOptions::color.
constexpr std::string_view kReset = "\x1b[0m";
constexpr std::string_view kBold = "\x1b[1m";
constexpr std::string_view kRed = "\x1b[31m";
constexpr std::string_view kGreen = "\x1b[32m";
constexpr std::string_view kYellow = "\x1b[33m";
constexpr std::string_view kDim = "\x1b[2m";
// The bars' cells: full and light blocks, one column each.
constexpr std::string_view kFullCell = "█";
constexpr std::string_view kEmptyCell = "░";

// Bytes of the escape sequence (ESC [ parameters final-byte) that starts at text[i]; 0 if none.
// Monitor data never contains one: names are RFC 1123 and problems are the monitor's own words.
size_t EscapeLength(std::string_view text, size_t i) {
  if (text[i] != '\x1b' || i + 1 >= text.size() || text[i + 1] != '[') return 0;
  for (size_t j = i + 2; j < text.size(); ++j) {
    const auto c = static_cast<unsigned char>(text[j]);
    if (c >= 0x40 && c <= 0x7E) return j - i + 1;
  }
  return text.size() - i;
}

std::string Paint(std::string_view text, std::string_view code, bool color) {
  if (!color || text.empty()) return std::string(text);
  return std::string(code) + std::string(text) + std::string(kReset);
}

std::string Printf(const char* format, double value) {
  std::array<char, 64> buf{};
  const int n = std::snprintf(buf.data(), buf.size(), format, value);
  return n > 0 ? std::string(buf.data(), std::min<size_t>(static_cast<size_t>(n), buf.size() - 1))
               : std::string();
}

std::string FormatPercent(double percent) {
  return Printf("%.0f%%", std::max(percent, 0.0));
}

double Percent(uint64_t used, uint64_t total) {
  return 100.0 * static_cast<double>(used) / static_cast<double>(total);
}

// used/total as a percent, or "-" when there is no total to compare with.
std::string Ratio(uint64_t used, uint64_t total) {
  if (total == 0) return kMissing;
  return FormatPercent(100.0 * static_cast<double>(used) / static_cast<double>(total));
}

std::string PadRight(std::string_view text, size_t width) {
  std::string out(text);
  const size_t w = DisplayWidth(text);
  if (w < width) out.append(width - w, ' ');
  return out;
}

std::string PadLeft(std::string_view text, size_t width) {
  const size_t w = DisplayWidth(text);
  std::string out = w < width ? std::string(width - w, ' ') : std::string();
  out.append(text);
  return out;
}

void TrimRight(std::string& line) {
  while (!line.empty() && line.back() == ' ') line.pop_back();
}

std::string FormatTime(int64_t unix_ms) {
  if (unix_ms <= 0) return "time unknown";
  const auto seconds = static_cast<time_t>(unix_ms / 1000);
  struct tm utc {};
  if (gmtime_r(&seconds, &utc) == nullptr) return "time unknown";
  std::array<char, 32> buf{};
  const size_t n = std::strftime(buf.data(), buf.size(), "%Y-%m-%d %H:%M:%S UTC", &utc);
  return {buf.data(), n};
}

std::string Counted(size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// The columns right of the name. GPU rows fill the first three (memory, its percent,
// utilization), container rows all of them.
enum Column : size_t {
  kMemory,
  kMemoryPercent,
  kCompute,
  kSharing,
  kPolicy,
  kProcesses,
  kLastKernel,
  kColumnCount
};
constexpr size_t kGpuColumns = kCompute + 1;
constexpr std::array<bool, kColumnCount> kRightAligned = {true,  true, true, false,
                                                          false, true, true};
using Cells = std::array<std::string, kColumnCount>;

// One line of the table. A container row's name is made when the column's width is known
// (ContainerName cuts the pod first, keeping the container); other rows' names are cut at the end.
struct Row {
  std::string name;
  const ContainerGpuView* container = nullptr;
  Cells cells;
  bool container_grid = false;  // the container rows and their header
  std::string short_name;       // a header's name when the column is too narrow for `name`
};

size_t NaturalNameWidth(const Row& row) {
  return row.container != nullptr
             ? kIndent.size() + DisplayWidth(ContainerName(*row.container, SIZE_MAX))
             : DisplayWidth(row.name);
}

struct Layout {
  size_t columns = 0;  // cells used right of the name
  size_t name_width = 0;
  size_t separator = 2;
  std::array<size_t, kColumnCount> widths{};
  bool natural = false;  // every cell at its full width
};

// Column widths for `rows` in `width` terminal columns: cells keep their width, the name column
// takes what is left (down to kMinNameWidth), and columns are two spaces apart when everything
// fits at its full width, else one, so that a narrow terminal gives the space to the names.
Layout FitRows(const std::vector<const Row*>& rows, size_t columns, size_t width) {
  Layout l;
  l.columns = columns;
  size_t name_natural = 0;
  for (const Row* row : rows) {
    name_natural = std::max(name_natural, NaturalNameWidth(*row));
    for (size_t i = 0; i < columns; ++i) {
      l.widths[i] = std::max(l.widths[i], DisplayWidth(row->cells[i]));
    }
  }
  size_t fixed = 0;
  for (size_t i = 0; i < columns; ++i) fixed += l.widths[i];
  if (name_natural + fixed + l.separator * columns > width) l.separator = 1;
  const size_t used = fixed + l.separator * columns;
  l.natural = name_natural + used <= width;
  l.name_width = std::min(name_natural, std::max(width > used ? width - used : 0, kMinNameWidth));
  return l;
}

std::string RenderRow(const Row& row, const Layout& l, size_t width) {
  std::string line;
  if (row.container != nullptr) {
    const size_t room = l.name_width > kIndent.size() ? l.name_width - kIndent.size() : 0;
    line = std::string(kIndent) + ContainerName(*row.container, room);
  } else if (!row.short_name.empty() && DisplayWidth(row.name) > l.name_width) {
    line = Truncate(row.short_name, l.name_width);
  } else {
    line = Truncate(row.name, l.name_width);
  }
  line = PadRight(line, l.name_width);
  for (size_t i = 0; i < l.columns; ++i) {
    line.append(l.separator, ' ');
    line +=
        kRightAligned[i] ? PadLeft(row.cells[i], l.widths[i]) : PadRight(row.cells[i], l.widths[i]);
  }
  TrimRight(line);
  return Truncate(line, width);  // a terminal narrower than the fixed columns cuts the row
}

// "45%" with its bar before it when the view draws bars.
std::string WithBar(double percent, const std::string& text, const ViewOptions& o) {
  if (!o.bars) return text;
  return Bar(percent, o.bar_width, o.color) + " " + PadLeft(text, 4);
}

Cells GpuCells(const GpuView& gpu, const ViewOptions& o) {
  Cells c;
  if (gpu.memory_total_bytes == 0) {
    // No NVML figures: the monitor listed this GPU from the regions alone.
    c[kMemory] = gpu.memory_used_bytes == 0 ? std::string(kMissing)
                                            : FormatBytes(gpu.memory_used_bytes) + "/" + kMissing;
  } else {
    c[kMemory] = FormatBytes(gpu.memory_used_bytes) + "/" + FormatBytes(gpu.memory_total_bytes);
  }
  c[kMemoryPercent] = Ratio(gpu.memory_used_bytes, gpu.memory_total_bytes);
  if (gpu.memory_total_bytes > 0) {
    c[kMemoryPercent] =
        WithBar(Percent(gpu.memory_used_bytes, gpu.memory_total_bytes), c[kMemoryPercent], o);
  }
  c[kCompute] = gpu.utilization_percent
                    ? WithBar(*gpu.utilization_percent, FormatPercent(*gpu.utilization_percent), o)
                    : kMissing;
  return c;
}

Cells ContainerCells(const ContainerGpuView& c, const ViewOptions& o) {
  Cells cells;
  cells[kMemory] = FormatBytes(c.memory_used_bytes) + "/" +
                   (c.memory_limit_bytes == 0 && !c.no_memory ? std::string(kUnlimited)
                                                              : FormatBytes(c.memory_limit_bytes));
  cells[kMemoryPercent] = Ratio(c.memory_used_bytes, c.memory_limit_bytes);
  if (c.memory_limit_bytes > 0) {
    cells[kMemoryPercent] =
        WithBar(Percent(c.memory_used_bytes, c.memory_limit_bytes), cells[kMemoryPercent], o);
  }
  cells[kCompute] = FormatPercent(c.utilization_percent) + "/" +
                    (c.sm_limit_percent <= 0 ? std::string(kUnlimited)
                                             : std::to_string(c.sm_limit_percent) + "%");
  if (o.bars) {
    // How much of its share the container uses: of its SM limit, else of the card.
    const double share = c.sm_limit_percent > 0 ? 100.0 * c.utilization_percent / c.sm_limit_percent
                                                : c.utilization_percent;
    cells[kCompute] = Bar(share, o.bar_width, o.color) + " " + cells[kCompute];
  }
  cells[kSharing] = monitor::SharingName(c.sharing);
  cells[kPolicy] = monitor::CorePolicyName(c.policy);
  cells[kProcesses] = std::to_string(c.processes.size());
  cells[kLastKernel] = FormatAgo(c.last_kernel_seconds_ago);
  return cells;
}

// The host's index, "-" for a GPU NVML does not list (the monitor knows it from a region only).
std::string GpuIndex(const GpuView& gpu) {
  return gpu.index < 0 ? std::string(kMissing) : std::to_string(gpu.index);
}

auto ContainerKey(const ContainerGpuView& c) {
  return std::tie(c.namespace_name, c.pod, c.container, c.pod_uid, c.vdevice_index);
}

}  // namespace

size_t DisplayWidth(std::string_view text) {
  size_t width = 0;
  for (size_t i = 0; i < text.size();) {
    if (const size_t esc = EscapeLength(text, i); esc > 0) {
      i += esc;
      continue;
    }
    if (!IsContinuationByte(text[i])) ++width;
    ++i;
  }
  return width;
}

std::string Truncate(std::string_view text, size_t width) {
  if (DisplayWidth(text) <= width) return std::string(text);
  if (width == 0) return "";
  // Keep width-1 code points (and the colour codes among them), then the ellipsis.
  size_t kept = 0;
  size_t end = 0;
  bool colored = false;
  while (end < text.size()) {
    if (const size_t esc = EscapeLength(text, end); esc > 0) {
      colored = true;
      end += esc;
      continue;
    }
    if (!IsContinuationByte(text[end])) {
      if (kept == width - 1) break;
      ++kept;
    }
    ++end;
  }
  std::string out = std::string(text.substr(0, end)) + kEllipsis;
  if (colored) out += kReset;  // the codes after the cut, a reset among them, are gone
  return out;
}

std::string Bar(double percent, size_t width, bool color) {
  if (width == 0) return "";
  const double p = std::isfinite(percent) ? std::max(percent, 0.0) : 0.0;
  size_t filled = width;
  if (p < 100) {
    filled = static_cast<size_t>(std::lround(p * static_cast<double>(width) / 100.0));
    if (p > 0) filled = std::max<size_t>(filled, 1);
    filled = std::min(filled, width - 1);
  }
  std::string full;
  for (size_t i = 0; i < filled; ++i) full += kFullCell;
  std::string empty;
  for (size_t i = filled; i < width; ++i) empty += kEmptyCell;
  const std::string_view level = p >= 90 ? kRed : p >= 75 ? kYellow : kGreen;
  return Paint(full, level, color) + Paint(empty, kDim, color);
}

std::string FormatBytes(uint64_t bytes) {
  if (bytes == 0) return "0MiB";
  if (bytes < kMiB / 2) return "<1MiB";
  const uint64_t mib = (bytes + kMiB / 2) / kMiB;
  if (mib < 1024) return std::to_string(mib) + "MiB";
  return Printf("%.1fGiB", static_cast<double>(bytes) / static_cast<double>(kGiB));
}

std::string FormatAgo(std::optional<double> seconds) {
  if (!seconds || std::isnan(*seconds)) return kMissing;
  const double s = std::max(*seconds, 0.0);
  if (s < 9.95) return Printf("%.1fs ago", s);
  if (s < 59.5) return Printf("%.0fs ago", s);
  // 59.5 s and more rounds to a minute, not down to "0m".
  if (s < 3600) return std::to_string(std::max<int64_t>(1, static_cast<int64_t>(s / 60))) + "m ago";
  if (s < 86400) return std::to_string(static_cast<int64_t>(s / 3600)) + "h ago";
  return std::to_string(static_cast<int64_t>(s / 86400)) + "d ago";
}

std::string ShortUuid(std::string_view uuid) {
  if (uuid.empty()) return kMissing;
  // "GPU-" and the first group of 8 hex digits; MIG UUIDs ("MIG-...") alike.
  constexpr size_t kShort = 12;
  return std::string(uuid.substr(0, kShort));
}

std::string ContainerName(const ContainerGpuView& c, size_t width) {
  const bool known = !c.namespace_name.empty();
  const std::string first = known ? c.namespace_name : "?";
  const std::string& middle_text = known ? c.pod : c.pod_uid;
  const std::string middle = middle_text.empty() ? "?" : middle_text;
  const std::string last = c.container.empty() ? "?" : c.container;
  std::string full = first + "/" + middle + "/" + last;
  if (DisplayWidth(full) <= width) return full;
  // Room for the namespace and the pod with the container whole. The pod is cut first, down to
  // one character and its ellipsis, then the namespace; without room for both, the whole name.
  const size_t last_width = DisplayWidth(last) + 2;
  const size_t room = width > last_width ? width - last_width : 0;
  constexpr size_t kCutPart = 2;
  if (room < 2 * kCutPart) return Truncate(full, width);
  const size_t first_width = std::min(DisplayWidth(first), room - kCutPart);
  return Truncate(first, first_width) + "/" + Truncate(middle, room - first_width) + "/" + last;
}

std::vector<std::string> Wrap(std::string_view text, size_t width) {
  std::vector<std::string> lines;
  if (width == 0) return lines;
  std::string line;
  for (std::string_view word : Split(text, ' ')) {
    if (word.empty()) continue;
    const size_t need = DisplayWidth(line) + (line.empty() ? 0 : 1) + DisplayWidth(word);
    if (!line.empty() && need > width) {
      lines.push_back(std::move(line));
      line.clear();
    }
    if (!line.empty()) line += ' ';
    line += word;
    // A word longer than a line is broken at the edge.
    while (DisplayWidth(line) > width) {
      size_t end = 0;
      for (size_t kept = 0; end < line.size(); ++end) {
        if (!IsContinuationByte(line[end]) && kept++ == width) break;
      }
      lines.push_back(line.substr(0, end));
      line.erase(0, end);
    }
  }
  if (!line.empty() || lines.empty()) lines.push_back(std::move(line));
  return lines;
}

namespace {

// One line per container the monitor cannot read in full (its state is not ok): its folder is
// flooded, a region is refused (its processes are not seen), or being created.
void AppendContainerProblems(const NodeSnapshot& snapshot, size_t width, bool color,
                             std::vector<std::string>& lines) {
  bool first = true;
  for (const ContainerStatusView& c : snapshot.containers) {
    if (c.state == ContainerState::kOk) continue;
    if (first) lines.emplace_back();
    first = false;
    ContainerGpuView name;
    name.namespace_name = c.namespace_name;
    name.pod = c.pod;
    name.pod_uid = c.pod_uid;
    name.container = c.container;
    lines.push_back(Paint(Truncate("! " + ContainerName(name, SIZE_MAX) + " " +
                                       monitor::ContainerStateName(c.state) + ": " + c.problem,
                                   width),
                          kRed, color));
  }
}

}  // namespace

namespace {

// The table's lines (the two headers, then each GPU's row and its containers' rows) for `gpus`,
// sorted. With `names_whole`: nullopt when a name would be cut at this width.
std::optional<std::vector<std::string>> RenderTable(const std::vector<const GpuView*>& gpus,
                                                    size_t container_count,
                                                    const ViewOptions& options, bool names_whole) {
  const size_t width = options.width;
  std::vector<std::string> lines;
  // The GPU row's name cell is three sub-columns (index, short UUID, type), aligned across GPUs.
  size_t index_width = DisplayWidth("GPU");
  size_t uuid_width = DisplayWidth("UUID");
  for (const GpuView* gpu : gpus) {
    index_width = std::max(index_width, GpuIndex(*gpu).size());
    uuid_width = std::max(uuid_width, DisplayWidth(ShortUuid(gpu->uuid)));
  }

  // Rows in drawing order; a GPU without containers gets a line saying so (nullptr here).
  std::vector<Row> rows;
  rows.reserve(2 + gpus.size() + container_count);  // stable: the grids below point into it
  rows.push_back({PadRight("GPU", index_width) + " " + PadRight("UUID", uuid_width) + " TYPE",
                  nullptr,
                  {"USED/TOTAL", "MEM%", "UTIL"},
                  false,
                  ""});
  rows.push_back({std::string(kIndent) + "NAMESPACE/POD/CONTAINER",
                  nullptr,
                  {"USED/LIMIT", "MEM%", "UTIL/SM", "SHARING", "POLICY", "PROCS", "KERNEL"},
                  true,
                  std::string(kIndent) + "NS/POD/CONTAINER"});
  std::vector<const Row*> gpu_rows = {&rows.front()};
  std::vector<const Row*> container_rows = {&rows.back()};
  std::vector<const Row*> order = {&rows.front(), &rows.back()};
  for (const GpuView* gpu : gpus) {
    Row& g = rows.emplace_back();
    g.name = PadLeft(GpuIndex(*gpu), index_width) + " " +
             PadRight(ShortUuid(gpu->uuid), uuid_width) + " " +
             (gpu->type.empty() ? std::string(kMissing) : gpu->type);
    g.cells = GpuCells(*gpu, options);
    gpu_rows.push_back(&g);
    order.push_back(&g);

    std::vector<const ContainerGpuView*> containers;
    containers.reserve(gpu->containers.size());
    for (const ContainerGpuView& c : gpu->containers) containers.push_back(&c);
    std::stable_sort(containers.begin(), containers.end(),
                     [](const ContainerGpuView* a, const ContainerGpuView* b) {
                       return ContainerKey(*a) < ContainerKey(*b);
                     });
    if (containers.empty()) order.push_back(nullptr);
    for (const ContainerGpuView* c : containers) {
      Row& r = rows.emplace_back();
      r.container = c;
      r.cells = ContainerCells(*c, options);
      r.container_grid = true;
      container_rows.push_back(&r);
      order.push_back(&r);
    }
  }

  // One grid for all rows when it fits, so that a GPU's memory and utilization stand above its
  // containers'; otherwise GPU rows and container rows are each aligned on their own, and a
  // long container name does not cut the GPU's type.
  std::vector<const Row*> all = gpu_rows;
  all.insert(all.end(), container_rows.begin(), container_rows.end());
  const Layout shared = FitRows(all, kColumnCount, width);
  const Layout gpu_layout = shared.natural ? shared : FitRows(gpu_rows, kGpuColumns, width);
  const Layout container_layout =
      shared.natural ? shared : FitRows(container_rows, kColumnCount, width);
  if (names_whole && !(gpu_layout.natural && container_layout.natural)) return std::nullopt;
  for (const Row* row : order) {
    if (row == nullptr) {
      lines.push_back(Truncate(std::string(kIndent) + "no containers", width));
    } else {
      const bool header = row == &rows[0] || row == &rows[1];
      lines.push_back(
          Paint(RenderRow(*row, row->container_grid ? container_layout : gpu_layout, width), kBold,
                header && options.color));
    }
  }
  return lines;
}

}  // namespace

std::vector<std::string> RenderSnapshot(const NodeSnapshot& snapshot, const ViewOptions& options) {
  const size_t width = options.width;
  std::vector<const GpuView*> gpus;
  gpus.reserve(snapshot.gpus.size());
  std::set<std::tuple<std::string, std::string, std::string, std::string>> distinct;
  size_t container_count = 0;
  for (const GpuView& gpu : snapshot.gpus) {
    gpus.push_back(&gpu);
    container_count += gpu.containers.size();
    for (const ContainerGpuView& c : gpu.containers) {
      distinct.emplace(c.pod_uid, c.namespace_name, c.pod, c.container);
    }
  }
  std::stable_sort(gpus.begin(), gpus.end(), [](const GpuView* a, const GpuView* b) {
    // GPUs NVML does not list (index -1: known from a region only) come last.
    const bool a_unlisted = a->index < 0;
    const bool b_unlisted = b->index < 0;
    return std::tie(a_unlisted, a->index, a->uuid) < std::tie(b_unlisted, b->index, b->uuid);
  });

  std::vector<std::string> lines;
  lines.push_back(Truncate("node " + (snapshot.node.empty() ? std::string("?") : snapshot.node) +
                               "  " + FormatTime(snapshot.time_unix_ms) + "  " +
                               Counted(gpus.size(), "GPU", "GPUs") + "  " +
                               Counted(distinct.size(), "container", "containers"),
                           width));
  lines.emplace_back();
  if (gpus.empty()) {
    lines.push_back(Truncate("no GPUs reported by the monitor on this node", width));
    AppendContainerProblems(snapshot, width, options.color, lines);
    return lines;
  }

  // Bars only where they leave every name whole: narrower bars first, then none (the plain
  // table), so that a person sees whose row it is before how full it is.
  std::optional<std::vector<std::string>> table;
  if (options.bars) {
    for (const size_t bar_width : {kBarWidth, kBarWidth / 2}) {
      ViewOptions narrower = options;
      narrower.bar_width = bar_width;
      table = RenderTable(gpus, container_count, narrower, /*names_whole=*/true);
      if (table) break;
    }
  }
  if (!table) {
    ViewOptions plain = options;
    plain.bars = false;
    table = RenderTable(gpus, container_count, plain, /*names_whole=*/false);
  }
  lines.insert(lines.end(), table->begin(), table->end());
  AppendContainerProblems(snapshot, width, options.color, lines);
  return lines;
}

void ChooseStyle(const TerminalTraits& t, ViewOptions& options) {
  options.bars = t.stdout_tty && !t.plain_flag;
  const bool no_color_env = t.no_color_env != nullptr && *t.no_color_env != '\0';
  const bool dumb = t.term_env != nullptr && std::string_view(t.term_env) == "dumb";
  options.color = options.bars && !t.no_color_flag && !no_color_env && !dumb;
}

std::vector<std::string> FitHeight(std::vector<std::string> lines, size_t rows) {
  if (rows == 0 || lines.size() <= rows) return lines;
  const size_t hidden = lines.size() - (rows - 1);
  lines.resize(rows - 1);
  lines.push_back(std::string(kEllipsis) + " " + std::to_string(hidden) + " more " +
                  (hidden == 1 ? "line" : "lines"));
  return lines;
}

Result<std::chrono::milliseconds> ParseInterval(std::string_view text) {
  const std::string_view t = TrimSpace(text);
  double value = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
  const std::string_view unit(end, static_cast<size_t>(t.data() + t.size() - end));
  double ms_per_unit = 0;
  if (unit.empty() || unit == "s") {
    ms_per_unit = 1000;
  } else if (unit == "ms") {
    ms_per_unit = 1;
  } else if (unit == "m") {
    ms_per_unit = 60000;
  }
  if (ec != std::errc() || ms_per_unit == 0 || !std::isfinite(value)) {
    return InvalidArgument("--interval: '" + std::string(text) +
                           "' is not a duration such as 1s, 500ms or 2m");
  }
  const double ms = std::round(value * ms_per_unit);
  if (ms < 50 || ms > 3600 * 1000) {
    return InvalidArgument("--interval: '" + std::string(text) + "' is not between 50ms and 1h");
  }
  return std::chrono::milliseconds(static_cast<int64_t>(ms));
}

// What a monitor URL looks like, after each complaint about one.
constexpr std::string_view kUrlExample = " (e.g. http://gpu-node-1:9394 or gpu-node-1:9394)";

Result<MonitorUrl> ParseMonitorUrl(std::string_view url) {
  const std::string_view u = TrimSpace(url);
  if (u.empty()) return InvalidArgument("monitor URL is empty");
  std::string scheme = "http";
  std::string_view rest = u;
  if (const size_t pos = u.find("://"); pos != std::string_view::npos) {
    scheme = Lower(u.substr(0, pos));
    rest = u.substr(pos + 3);
  }
  if (scheme != "http" && scheme != "https") {
    return InvalidArgument("monitor URL '" + std::string(u) + "': scheme must be http or https" +
                           std::string(kUrlExample));
  }
  const size_t slash = rest.find('/');
  const std::string_view authority = rest.substr(0, slash);
  const std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash);
  // The port follows the last ':' outside an IPv6 literal ("[::1]:9394").
  const size_t bracket = authority.rfind(']');
  const size_t colon = authority.rfind(':');
  std::string_view host = authority;
  if (colon != std::string_view::npos && (bracket == std::string_view::npos || colon > bracket)) {
    host = authority.substr(0, colon);
    const auto port = ParseInt<uint32_t>(authority.substr(colon + 1));
    if (!port || *port == 0 || *port > 65535) {
      return InvalidArgument("monitor URL '" + std::string(u) + "': port '" +
                             std::string(authority.substr(colon + 1)) +
                             "' is not a number from 1 to 65535" + std::string(kUrlExample));
    }
  }
  if (host.empty()) {
    return InvalidArgument("monitor URL '" + std::string(u) + "': no host" +
                           std::string(kUrlExample));
  }
  MonitorUrl out;
  out.base = scheme + "://" + std::string(authority);
  out.path = path.empty() || path == "/" ? "/api/v1/snapshot" : std::string(path);
  return out;
}

}  // namespace vgpu::cli::top
