// `vgpu top`'s layout (cli/top_view.h): frames for given snapshots and widths, and its helpers.
#include "cli/top_view.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace vgpu::cli::top {
namespace {

using monitor::ContainerGpuView;
using monitor::CorePolicy;
using monitor::GpuView;
using monitor::NodeSnapshot;
using monitor::Sharing;

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;

ContainerGpuView Container(std::string ns, std::string pod, std::string container) {
  ContainerGpuView c;
  c.namespace_name = std::move(ns);
  c.pod = std::move(pod);
  c.pod_uid = "uid-of-" + c.pod;
  c.container = std::move(container);
  return c;
}

// The snapshot of tests/cli/testdata/top_snapshot.json: GPUs out of order, one without NVML
// figures holding a pod the monitor does not know, one without containers.
NodeSnapshot Fixture() {
  NodeSnapshot s;
  s.node = "gpu-node-1";
  s.time_unix_ms = 1763640003000;  // 2025-11-20 12:00:03 UTC

  GpuView idle;
  idle.index = 2;
  idle.uuid = "GPU-2c3d4e5f-6a7b-4c8d-9e0f-1a2b3c4d5e6f";
  idle.type = "NVIDIA-H100";
  idle.memory_total_bytes = 80 * kGiB;
  idle.utilization_percent = 0;
  idle.memory_utilization_percent = 0;

  GpuView busy;
  busy.index = 0;
  busy.uuid = "GPU-8f3a2c1d-5e6f-4a7b-8c9d-0e1f2a3b4c5d";
  busy.type = "NVIDIA-H100";
  busy.memory_total_bytes = 80 * kGiB;
  busy.memory_used_bytes = 13207024435;  // 12.3 GiB
  busy.utilization_percent = 45;
  busy.memory_utilization_percent = 20;
  ContainerGpuView infer = Container("ml", "infer-7f9c", "server");
  infer.memory_used_bytes = 512 * kMiB;
  infer.utilization_percent = 5;
  infer.sharing = Sharing::kShared;
  infer.policy = CorePolicy::kForce;
  infer.last_kernel_seconds_ago = 12.4;
  infer.processes = {{1, 4242, 512 * kMiB}};
  ContainerGpuView train = Container("default", "train-0", "main");
  train.memory_used_bytes = 3 * kGiB;
  train.memory_limit_bytes = 4 * kGiB;
  train.sm_limit_percent = 50;
  train.utilization_percent = 30.2;
  train.sharing = Sharing::kShared;
  train.last_kernel_seconds_ago = 0.2;
  train.processes = {{7, 5001, 2 * kGiB}, {9, 5002, kGiB}};
  busy.containers = {infer, train};

  GpuView no_nvml;
  no_nvml.index = 1;
  no_nvml.uuid = "GPU-1b2c3d4e-5f6a-4b7c-8d9e-0f1a2b3c4d5e";
  no_nvml.type = "NVIDIA-H100";
  ContainerGpuView unknown = Container("", "", "worker");
  unknown.pod_uid = "5f0c3a52-1d2e-4f3a-8b4c-5d6e7f8a9b0c";
  unknown.memory_used_bytes = kGiB;
  unknown.memory_limit_bytes = 2 * kGiB;
  unknown.sm_limit_percent = 30;
  unknown.sharing = Sharing::kAlone;
  unknown.policy = CorePolicy::kDisable;
  no_nvml.containers = {unknown};

  s.gpus = {idle, busy, no_nvml};
  return s;
}

NodeSnapshot OneGpu(std::vector<ContainerGpuView> containers) {
  NodeSnapshot s;
  s.node = "n1";
  s.time_unix_ms = 1763640003000;
  GpuView g;
  g.index = 0;
  g.uuid = "GPU-aaaaaaaa-0000";
  g.type = "NVIDIA-A10";
  g.memory_total_bytes = 24 * kGiB;
  g.memory_used_bytes = 2 * kGiB;
  g.utilization_percent = 7;
  g.containers = std::move(containers);
  s.gpus = {g};
  return s;
}

// A line of an expected frame too long for one literal.
std::string Line(const std::string& left, const std::string& right) {
  return left + right;
}

struct FrameCase {
  const char* name;
  NodeSnapshot snapshot;
  size_t width;
  std::vector<std::string> want;
};

TEST(TopView, RenderSnapshotTable) {
  ContainerGpuView long_name =
      Container("team-research-vision",
                "imagenet-resnet152-distributed-training-worker-7f9c6d5b8-x2kq4", "trainer");
  long_name.memory_used_bytes = 700 * kMiB;
  long_name.memory_limit_bytes = 1 * kGiB;
  long_name.sm_limit_percent = 100;
  long_name.utilization_percent = 99.6;
  long_name.last_kernel_seconds_ago = 3725;
  ContainerGpuView unknown_no_uid = Container("", "", "");
  unknown_no_uid.pod_uid = "";
  unknown_no_uid.memory_used_bytes = 100;

  NodeSnapshot empty;
  empty.node = "bare";

  const std::vector<FrameCase> cases = {
      {"fixture at 80 columns: GPU and container rows aligned apart, names fitted",
       Fixture(),
       80,
       {
           "node gpu-node-1  2025-11-20 12:00:03 UTC  3 GPUs  3 containers",
           "",
           "GPU UUID         TYPE              USED/TOTAL  MEM%  UTIL",
           "  NS/POD/CONTAINER        USED/LIMIT MEM% UTIL/SM SHARING POLICY  PROCS   KERNEL",
           "  0 GPU-8f3a2c1d NVIDIA-H100  12.3GiB/80.0GiB   15%   45%",
           "  default/train-0/main 3.0GiB/4.0GiB  75% 30%/50% shared  default     2 0.2s ago",
           "  ml/infer-7f9c/server      512MiB/∞    -    5%/∞ shared  force       1  12s ago",
           "  1 GPU-1b2c3d4e NVIDIA-H100                -     -     -",
           "  ?/5f0c3a52-1…/worker 1.0GiB/2.0GiB  50%  0%/30% alone   disable     0        -",
           "  2 GPU-2c3d4e5f NVIDIA-H100     0MiB/80.0GiB    0%    0%",
           "  no containers",
       }},
      {"fixture at 200 columns: one grid, nothing cut",
       Fixture(),
       200,
       {
           "node gpu-node-1  2025-11-20 12:00:03 UTC  3 GPUs  3 containers",
           "",
           "GPU UUID         TYPE                                 USED/TOTAL  MEM%     UTIL",
           Line("  NAMESPACE/POD/CONTAINER                             USED/LIMIT  MEM%",
                "  UTIL/SM  SHARING  POLICY   PROCS    KERNEL"),
           "  0 GPU-8f3a2c1d NVIDIA-H100                     12.3GiB/80.0GiB   15%      45%",
           Line("  default/train-0/main                             3.0GiB/4.0GiB   75%",
                "  30%/50%  shared   default      2  0.2s ago"),
           Line("  ml/infer-7f9c/server                                  512MiB/∞     -",
                "     5%/∞  shared   force        1   12s ago"),
           "  1 GPU-1b2c3d4e NVIDIA-H100                                   -     -        -",
           Line("  ?/5f0c3a52-1d2e-4f3a-8b4c-5d6e7f8a9b0c/worker    1.0GiB/2.0GiB   50%",
                "   0%/30%  alone    disable      0         -"),
           "  2 GPU-2c3d4e5f NVIDIA-H100                        0MiB/80.0GiB    0%       0%",
           "  no containers",
       }},
      {"long names at 80 columns: the pod is cut, then the namespace, the container stays",
       OneGpu({long_name}),
       80,
       {
           "node n1  2025-11-20 12:00:03 UTC  1 GPU  1 container",
           "",
           "GPU UUID         TYPE            USED/TOTAL  MEM%  UTIL",
           "  NS/POD/CONTAINER        USED/LIMIT MEM%   UTIL/SM SHARING POLICY  PROCS KERNEL",
           "  0 GPU-aaaaaaaa NVIDIA-A10  2.0GiB/24.0GiB    8%    7%",
           "  team-res…/i…/trainer 700MiB/1.0GiB  68% 100%/100% unknown default     0 1h ago",
       }},
      {"a GPU without containers says so; the grids apart as they do not fit together",
       OneGpu({}),
       80,
       {
           "node n1  2025-11-20 12:00:03 UTC  1 GPU  0 containers",
           "",
           "GPU UUID         TYPE            USED/TOTAL  MEM%  UTIL",
           "  NAMESPACE/POD/CONTAINER USED/LIMIT MEM% UTIL/SM SHARING POLICY PROCS KERNEL",
           "  0 GPU-aaaaaaaa NVIDIA-A10  2.0GiB/24.0GiB    8%    7%",
           "  no containers",
       }},
      {"a pod without namespace nor UID, a GPU without UUID nor type",
       [&] {
         NodeSnapshot s = OneGpu({unknown_no_uid});
         s.gpus[0].uuid = "";
         s.gpus[0].type = "";
         s.gpus[0].memory_total_bytes = 0;
         s.gpus[0].utilization_percent.reset();
         return s;
       }(),
       200,
       {
           "node n1  2025-11-20 12:00:03 UTC  1 GPU  1 container",
           "",
           "GPU UUID TYPE              USED/TOTAL  MEM%     UTIL",
           "  NAMESPACE/POD/CONTAINER  USED/LIMIT  MEM%  UTIL/SM  SHARING  POLICY   PROCS  KERNEL",
           "  0 -    -                   2.0GiB/-     -        -",
           "  ?/?/?                       <1MiB/∞     -     0%/∞  unknown  default      0       -",
       }},
      {"no GPUs",
       empty,
       80,
       {"node bare  time unknown  0 GPUs  0 containers", "",
        "no GPUs reported by the monitor on this node"}},
  };
  for (const FrameCase& c : cases) {
    SCOPED_TRACE(c.name);
    const std::vector<std::string> got = RenderSnapshot(c.snapshot, {c.width});
    EXPECT_EQ(got, c.want);
    for (const std::string& line : got) {
      EXPECT_LE(DisplayWidth(line), c.width) << line;
      EXPECT_TRUE(line.empty() || line.back() != ' ') << "trailing space: '" << line << "'";
    }
  }
}

// Containers the monitor cannot read in full (a flooded folder, a refused region) are listed under
// the table with their state and problem; those in state ok are not.
TEST(TopView, ContainersTheMonitorCannotReadAreListedUnderTheTable) {
  NodeSnapshot s = Fixture();
  s.containers.push_back(
      {"default", "train-0", "uid-t", "main", monitor::ContainerState::kOk, 1, ""});
  s.containers.push_back({"team", "evil", "uid-e", "main", monitor::ContainerState::kUnusable, 0,
                          "r.cache: corrupt: device_count 4294967295 exceeds 16"});
  s.containers.push_back({"", "", "uid-f", "c", monitor::ContainerState::kOverLimits, 4,
                          "folder holds more than 256 entries"});
  const std::vector<std::string> lines = RenderSnapshot(s, {200});
  const std::vector<std::string> tail(lines.end() - 3, lines.end());
  EXPECT_EQ(tail, (std::vector<std::string>{
                      "",
                      "! team/evil/main unusable: r.cache: corrupt: device_count 4294967295 "
                      "exceeds 16",
                      "! ?/uid-f/c over_limits: folder holds more than 256 entries"}));
  NodeSnapshot none = Fixture();
  EXPECT_EQ(RenderSnapshot(none, {200}).size(), lines.size() - 3);
}

// A limit of 0 bytes (libvgpu refuses every allocation) shows as 0, not as no limit.
TEST(TopView, ALimitOfNoMemoryShowsAsZero) {
  NodeSnapshot s;
  GpuView& g = s.gpus.emplace_back();
  g.uuid = "GPU-1";
  ContainerGpuView c = Container("ns", "p", "c");
  c.memory_limit_bytes = 0;
  g.containers.push_back(c);
  auto row = [&] {
    for (const std::string& line : RenderSnapshot(s, {120})) {
      if (line.rfind("  ns/p/c", 0) == 0) return line;
    }
    return std::string();
  };
  EXPECT_NE(row().find("0MiB/\u221e"), std::string::npos) << row();
  s.gpus[0].containers[0].no_memory = true;
  EXPECT_NE(row().find("0MiB/0MiB"), std::string::npos) << row();
}

TEST(TopView, EveryWidthFits) {
  for (size_t width = 20; width <= 220; ++width) {
    for (const std::string& line : RenderSnapshot(Fixture(), {width})) {
      ASSERT_LE(DisplayWidth(line), width) << line;
    }
  }
}

// Bars: whole cells rounded to the nearest, never empty above 0 nor full below 100, full from
// 100 (a container over its limit, an over-subscribed card).
TEST(TopView, BarWidthMath) {
  const auto cells = [](const std::string& bar, std::string_view cell) {
    size_t n = 0;
    for (size_t at = bar.find(cell); at != std::string::npos; at = bar.find(cell, at + 1)) ++n;
    return n;
  };
  struct Case {
    double percent;
    size_t width;
    size_t filled;
  };
  const Case cases[] = {
      {0, 10, 0},    {0.1, 10, 1}, {4.9, 10, 1}, {5, 10, 1},        {15, 10, 2},
      {45, 10, 5},   {50, 10, 5},  {94, 10, 9},  {99.9, 10, 9},     {100, 10, 10},
      {250, 10, 10}, {-3, 10, 0},  {50, 1, 0},   {100, 1, 1},       {1, 1, 0},
      {33, 3, 1},    {67, 3, 2},   {NAN, 10, 0}, {INFINITY, 10, 0},
  };
  for (const Case& c : cases) {
    const std::string bar = Bar(c.percent, c.width, /*color=*/false);
    EXPECT_EQ(DisplayWidth(bar), c.width) << c.percent << "% of " << c.width;
    EXPECT_EQ(cells(bar, "█"), c.filled) << c.percent << "% of " << c.width << ": " << bar;
    EXPECT_EQ(cells(bar, "░"), c.width - c.filled) << c.percent << "% of " << c.width;
  }
  EXPECT_EQ(Bar(50, 0, true), "");
  // 1 cell: anything above 0 but below 100 cannot be both "not idle" and "not full"; not full wins.
  EXPECT_EQ(Bar(99, 1, false), "░");
}

TEST(TopView, BarColourByLevelAndWidthUnchanged) {
  EXPECT_EQ(Bar(50, 4, true), "\x1b[32m██\x1b[0m\x1b[2m░░\x1b[0m");
  EXPECT_EQ(Bar(80, 4, true).rfind("\x1b[33m", 0), 0u);
  EXPECT_EQ(Bar(95, 4, true).rfind("\x1b[31m", 0), 0u);
  EXPECT_EQ(Bar(100, 4, true), "\x1b[31m████\x1b[0m");  // no empty part, no code for it
  EXPECT_EQ(Bar(0, 4, true), "\x1b[2m░░░░\x1b[0m");
  for (double p : {0.0, 50.0, 80.0, 95.0, 100.0}) EXPECT_EQ(DisplayWidth(Bar(p, 7, true)), 7u);
}

TEST(TopView, ColourCodesTakeNoColumnsAndSurviveACut) {
  const std::string red = "\x1b[31mabcdef\x1b[0m";
  EXPECT_EQ(DisplayWidth(red), 6u);
  EXPECT_EQ(Truncate(red, 6), red);
  // Cut: the opening code stays, the reset after the cut is gone, so one is added.
  EXPECT_EQ(Truncate(red, 4), "\x1b[31mabc…\x1b[0m");
  EXPECT_EQ(Truncate("plain text", 6), "plain…");  // no reset where there was no colour
}

// With bars: the memory and compute cells carry a bar beside the figure; GPUs and containers
// without a figure to compare with get none. The plain table (bars off) is RenderSnapshotTable's.
TEST(TopView, BarsBesideMemoryAndCompute) {
  ViewOptions o;
  o.width = 200;
  o.bars = true;
  const std::vector<std::string> lines = RenderSnapshot(Fixture(), o);
  const auto line_with = [&](const std::string& words) {
    for (const std::string& l : lines) {
      if (l.find(words) != std::string::npos) return l;
    }
    ADD_FAILURE() << "no line with " << words;
    return std::string();
  };
  // GPU 0: 12.3 of 80 GiB (15%: 2 cells), 45% busy (5 cells, rounded to the nearest).
  const std::string gpu0 = line_with("GPU-8f3a2c1d");
  EXPECT_NE(gpu0.find("██░░░░░░░░  15%"), std::string::npos) << gpu0;
  EXPECT_NE(gpu0.find("█████░░░░░  45%"), std::string::npos) << gpu0;
  // default/train-0/main: 3 of 4 GiB (75%: 8 cells); 30.2% of its 50% SM limit (60%: 6 cells).
  const std::string train = line_with("default/train-0/main");
  EXPECT_NE(train.find("████████░░  75%"), std::string::npos) << train;
  EXPECT_NE(train.find("██████░░░░ 30%/50%"), std::string::npos) << train;
  // ml/infer: no memory limit: no memory bar; compute of the whole card (5%: 1 cell).
  const std::string infer = line_with("ml/infer-7f9c/server");
  EXPECT_NE(infer.find("512MiB/∞"), std::string::npos) << infer;
  EXPECT_EQ(infer.find("█░░░░░░░░░    -"), std::string::npos) << infer;
  EXPECT_NE(infer.find("█░░░░░░░░░ 5%/∞"), std::string::npos) << infer;
  // GPU 1 has no NVML figures: no bars on its row.
  const std::string gpu1 = line_with("GPU-1b2c3d4e");
  EXPECT_EQ(gpu1.find("░"), std::string::npos) << gpu1;
  for (const std::string& l : lines) EXPECT_EQ(l.find('\x1b'), std::string::npos) << l;
}

// Colour never changes a line's width, and with colour off (the default, and what --no-color,
// NO_COLOR and a pipe give) no escape code is written at any width.
TEST(TopView, ColourOnlyWhenAskedAndEveryWidthStillFits) {
  NodeSnapshot s = Fixture();
  monitor::ContainerStatusView bad;
  bad.namespace_name = "ml";
  bad.pod = "p";
  bad.container = "c";
  bad.state = monitor::ContainerState::kUnusable;
  bad.problem = "region refused";
  s.containers = {bad};
  for (size_t width = 20; width <= 220; width += 7) {
    for (bool bars : {false, true}) {
      ViewOptions plain{.width = width, .bars = bars, .color = false};
      ViewOptions color{.width = width, .bars = bars, .color = true};
      const std::vector<std::string> p = RenderSnapshot(s, plain);
      const std::vector<std::string> c = RenderSnapshot(s, color);
      ASSERT_EQ(p.size(), c.size());
      for (size_t i = 0; i < p.size(); ++i) {
        EXPECT_EQ(p[i].find('\x1b'), std::string::npos) << p[i];
        EXPECT_LE(DisplayWidth(c[i]), width) << c[i];
        EXPECT_EQ(DisplayWidth(c[i]), DisplayWidth(p[i])) << width << ": " << c[i];
      }
      // The header and the problem line are coloured.
      EXPECT_EQ(c[2].rfind("\x1b[1m", 0), 0u) << c[2];
      EXPECT_EQ(c.back().rfind("\x1b[31m", 0), 0u) << c.back();
    }
  }
}

TEST(TopView, ChooseStyle) {
  struct Case {
    const char* name;
    TerminalTraits t;
    bool bars;
    bool color;
  };
  const Case cases[] = {
      {"pipe", {.stdout_tty = false}, false, false},
      {"terminal", {.stdout_tty = true, .term_env = "xterm-256color"}, true, true},
      {"terminal, no TERM", {.stdout_tty = true}, true, true},
      {"NO_COLOR=1", {.stdout_tty = true, .no_color_env = "1"}, true, false},
      {"NO_COLOR empty (unset per no-color.org)",
       {.stdout_tty = true, .no_color_env = ""},
       true,
       true},
      {"TERM=dumb", {.stdout_tty = true, .term_env = "dumb"}, true, false},
      {"--no-color", {.stdout_tty = true, .no_color_flag = true}, true, false},
      {"--plain", {.stdout_tty = true, .plain_flag = true}, false, false},
      {"pipe, colour not refused", {.stdout_tty = false, .no_color_env = nullptr}, false, false},
  };
  for (const Case& c : cases) {
    ViewOptions o;
    o.width = 99;
    ChooseStyle(c.t, o);
    EXPECT_EQ(o.bars, c.bars) << c.name;
    EXPECT_EQ(o.color, c.color) << c.name;
    EXPECT_EQ(o.width, 99u) << c.name;
  }
}

TEST(TopView, ContainersSortedByNamespacePodContainer) {
  NodeSnapshot s = OneGpu({Container("b", "p", "c"), Container("a", "q", "c"),
                           Container("a", "p", "d"), Container("a", "p", "c")});
  const std::vector<std::string> lines = RenderSnapshot(s, {200});
  std::vector<std::string> names;
  for (const std::string& line : lines) {
    if (line.rfind("  a/", 0) == 0 || line.rfind("  b/", 0) == 0)
      names.push_back(line.substr(2, 5));
  }
  EXPECT_EQ(names, (std::vector<std::string>{"a/p/c", "a/p/d", "a/q/c", "b/p/c"}));
}

TEST(TopView, GpusByIndexThoseNvmlDoesNotListLast) {
  NodeSnapshot s;
  for (int index : {1, -1, 0}) {
    GpuView g;
    g.index = index;
    g.uuid = "GPU-" + std::to_string(index + 5) + "0000000";
    s.gpus.push_back(g);
  }
  const std::vector<std::string> lines = RenderSnapshot(s, {80});
  ASSERT_EQ(lines.size(), 10u);
  EXPECT_EQ(lines[4].substr(0, 16), "  0 GPU-50000000");
  EXPECT_EQ(lines[6].substr(0, 16), "  1 GPU-60000000");
  EXPECT_EQ(lines[8].substr(0, 16), "  - GPU-40000000");
}

TEST(TopView, FormatBytes) {
  const std::vector<std::pair<uint64_t, std::string>> cases = {
      {0, "0MiB"},
      {1, "<1MiB"},
      {kMiB / 2, "1MiB"},
      {kMiB, "1MiB"},
      {512 * kMiB, "512MiB"},
      {1023 * kMiB, "1023MiB"},
      {1024 * kMiB - 1, "1.0GiB"},
      {kGiB, "1.0GiB"},
      {3 * kGiB + 300 * kMiB, "3.3GiB"},
      {80 * kGiB, "80.0GiB"},
      {141 * kGiB, "141.0GiB"},
  };
  for (const auto& [bytes, want] : cases) EXPECT_EQ(FormatBytes(bytes), want) << bytes;
}

TEST(TopView, FormatAgo) {
  const std::vector<std::pair<std::optional<double>, std::string>> cases = {
      {std::nullopt, "-"}, {0.0, "0.0s ago"}, {0.2, "0.2s ago"},  {-1.0, "0.0s ago"},
      {9.9, "9.9s ago"},   {9.96, "10s ago"}, {42.4, "42s ago"},  {59.6, "1m ago"},
      {125, "2m ago"},     {3600, "1h ago"},  {86399, "23h ago"}, {172800, "2d ago"},
  };
  for (const auto& [seconds, want] : cases) EXPECT_EQ(FormatAgo(seconds), want);
}

TEST(TopView, TruncateCountsCodePoints) {
  struct Case {
    std::string text;
    size_t width;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"abcdef", 6, "abcdef"}, {"abcdef", 7, "abcdef"}, {"abcdef", 5, "abcd…"}, {"abcdef", 1, "…"},
      {"abcdef", 0, ""},       {"a∞b…c", 5, "a∞b…c"},   {"a∞b…cd", 5, "a∞b……"}, {"", 3, ""},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(Truncate(c.text, c.width), c.want) << c.text << " @" << c.width;
    EXPECT_LE(DisplayWidth(Truncate(c.text, c.width)), c.width);
  }
  EXPECT_EQ(DisplayWidth("12.3GiB/∞"), 9u);
}

TEST(TopView, Wrap) {
  struct Case {
    std::string text;
    size_t width;
    std::vector<std::string> want;
  };
  const std::vector<Case> cases = {
      {"short", 20, {"short"}},
      {"", 20, {""}},
      {"error: cannot reach it (retrying)", 16, {"error: cannot", "reach it", "(retrying)"}},
      {"a  b", 3, {"a b"}},
      {"see http://127.0.0.1:9394/api now", 10, {"see", "http://127", ".0.0.1:939", "4/api now"}},
      {"∞∞∞ ∞", 3, {"∞∞∞", "∞"}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(Wrap(c.text, c.width), c.want) << c.text;
  }
}

TEST(TopView, ContainerName) {
  const ContainerGpuView known = Container("default", "train-0", "main");
  ContainerGpuView unknown = Container("", "", "worker");
  unknown.pod_uid = "5f0c3a52-1d2e";
  const std::vector<std::tuple<ContainerGpuView, size_t, std::string>> cases = {
      {known, 40, "default/train-0/main"},     {known, 20, "default/train-0/main"},
      {known, 19, "default/train…/main"},      {known, 15, "default/t…/main"},
      {known, 14, "defau…/t…/main"},  // then the namespace
      {unknown, 40, "?/5f0c3a52-1d2e/worker"}, {unknown, 12, "?/5f…/worker"},
  };
  for (const auto& [c, width, want] : cases) {
    EXPECT_EQ(ContainerName(c, width), want) << width;
  }
}

TEST(TopView, ShortUuid) {
  EXPECT_EQ(ShortUuid("GPU-8f3a2c1d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"), "GPU-8f3a2c1d");
  EXPECT_EQ(ShortUuid("GPU-12"), "GPU-12");
  EXPECT_EQ(ShortUuid(""), "-");
}

TEST(TopView, FitHeight) {
  const std::vector<std::string> five = {"a", "b", "c", "d", "e"};
  EXPECT_EQ(FitHeight(five, 0), five);
  EXPECT_EQ(FitHeight(five, 5), five);
  EXPECT_EQ(FitHeight(five, 9), five);
  EXPECT_EQ(FitHeight(five, 4), (std::vector<std::string>{"a", "b", "c", "… 2 more lines"}));
  EXPECT_EQ(FitHeight(five, 1), (std::vector<std::string>{"… 5 more lines"}));
  EXPECT_EQ(FitHeight({"a", "b"}, 1), (std::vector<std::string>{"… 2 more lines"}));
  EXPECT_EQ(FitHeight({"a", "b", "c"}, 2), (std::vector<std::string>{"a", "… 2 more lines"}));
}

TEST(TopView, ParseInterval) {
  const std::vector<std::pair<std::string, int64_t>> good = {
      {"1s", 1000},   {"200ms", 200}, {"1.5s", 1500}, {"2", 2000},      {"2m", 120000},
      {" 1s ", 1000}, {"50ms", 50},   {"1h", -1},     {"60m", 3600000},
  };
  for (const auto& [text, ms] : good) {
    auto got = ParseInterval(text);
    if (ms < 0) {
      EXPECT_FALSE(got.ok()) << text;
      continue;
    }
    ASSERT_TRUE(got.ok()) << text << ": " << got.status().message();
    EXPECT_EQ(got->count(), ms) << text;
  }
  for (const char* bad : {"", "s", "fast", "10ms", "-1s", "1 s", "61m", "1e400s", "nan"}) {
    auto got = ParseInterval(bad);
    EXPECT_FALSE(got.ok()) << bad;
    if (!got.ok()) {
      EXPECT_NE(got.status().message().find("--interval"), std::string::npos);
    }
  }
}

TEST(TopView, ParseMonitorUrl) {
  struct Case {
    std::string url;
    std::string base;
    std::string path;
  };
  const std::vector<Case> good = {
      {"http://127.0.0.1:9394", "http://127.0.0.1:9394", "/api/v1/snapshot"},
      {"http://127.0.0.1:9394/", "http://127.0.0.1:9394", "/api/v1/snapshot"},
      {"node-7:9394", "http://node-7:9394", "/api/v1/snapshot"},
      {"HTTPS://node-7", "https://node-7", "/api/v1/snapshot"},
      {"http://[::1]:9394/custom/snap", "http://[::1]:9394", "/custom/snap"},
      {"http://[::1]", "http://[::1]", "/api/v1/snapshot"},
  };
  for (const Case& c : good) {
    auto got = ParseMonitorUrl(c.url);
    ASSERT_TRUE(got.ok()) << c.url << ": " << got.status().message();
    EXPECT_EQ(got->base, c.base) << c.url;
    EXPECT_EQ(got->path, c.path) << c.url;
    EXPECT_EQ(got->Full(), c.base + c.path);
  }
  // Each refusal says what is wrong with the URL and what one looks like.
  const struct {
    const char* url;
    const char* says;
  } bad[] = {
      {"", "monitor URL is empty"},
      {"ftp://x:1", "'ftp://x:1': scheme must be http or https (e.g. http://gpu-node-1:9394"},
      {"http://", "'http://': no host (e.g."},
      {"http://:9394", "no host"},
      {"http://h:0", "port '0' is not a number from 1 to 65535 (e.g."},
      {"http://h:x", "port 'x' is not a number from 1 to 65535"},
      {"http://h:65536", "port '65536' is not"},
      {"http://h:", "port '' is not"},
      {"::bad", "'::bad': port 'bad' is not a number"},
  };
  for (const auto& c : bad) {
    const auto got = ParseMonitorUrl(c.url);
    ASSERT_FALSE(got.ok()) << c.url;
    EXPECT_NE(got.status().message().find(c.says), std::string::npos)
        << c.url << ": " << got.status().message();
  }
}

}  // namespace
}  // namespace vgpu::cli::top
