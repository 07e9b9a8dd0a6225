// `vgpu sim`: runs a scenario on a simulated cluster (in-process API server, real device plugins
// with fake GPUs behind simulated kubelets, the real extender and webhook over HTTP) and prints
// placements, per-GPU allocation, rejected pods, timing and the invariant check.

#include <unistd.h>

#include <iostream>
#include <sstream>

#include "cli/bounded_read.h"
#include "cli/flag_values.h"
#include "cli_app.h"
#include "sim/cluster/extender_factory.h"
#include "sim/cluster/generator.h"
#include "sim/cluster/report.h"
#include "sim/cluster/runner.h"

namespace vgpu::cli {

namespace {

constexpr int kExitError = 1;

// Threads running kubelet Allocate calls: each waits on one node's Allocate, so more than the
// API server and the plugins can serve only adds threads (a run at 100,000 aborted in
// std::thread); 64 is 16 times the default.
constexpr int kMaxKubeletWorkers = 64;
constexpr int kMaxRows = 1000000;

struct SimFlags {
  std::string scenario_file;
  std::string scenario_word;  // `vgpu sim FILE`: the same as --scenario FILE
  int nodes = 0;
  int gpus_per_node = 8;
  int pods = 0;
  uint64_t seed = 1;
  std::string node_policy;
  std::string gpu_policy;
  std::string topology;
  std::string plugins = "auto";
  int kubelet_workers = 4;
  bool json = false;
  bool no_progress = false;
  bool verbose = false;
  size_t max_rows = 40;
  bool no_handshake = false;
  std::string async_bind = "auto";
};

Result<sim::Scenario> LoadScenario(const SimFlags& f) {
  if (!f.scenario_file.empty()) {
    // A regular file of bounded size: /dev/zero or a FIFO would be read forever.
    auto text =
        ReadBoundedFile(f.scenario_file, sim::ScenarioLimits::kMaxFileBytes, "scenario file");
    if (!text.ok()) return text.status();
    auto sc = sim::ParseScenarioYaml(*text);
    if (!sc.ok()) return sc.status().WithContext(f.scenario_file);
    return sc;
  }
  if (f.nodes > 0) {  // the flags' checks made --nodes and --pods come together, each > 0
    sim::GeneratorOptions g;
    g.nodes = f.nodes;
    g.gpus_per_node = f.gpus_per_node;
    g.pods = f.pods;
    g.seed = f.seed;
    return sim::GenerateScenario(g);
  }
  return sim::ParseScenarioYaml(sim::BuiltinScenarioYaml());
}

// A one-line progress bar on a terminal, redrawn in place; nothing when not a TTY.
class ProgressBar {
 public:
  ProgressBar(std::ostream& err, bool enabled, std::string label)
      : err_(err), enabled_(enabled), label_(std::move(label)) {}
  void Update(size_t done, size_t total) {
    if (!enabled_ || total == 0) return;
    const int pct = static_cast<int>(done * 100 / total);
    if (pct == last_ && done != total) return;
    last_ = pct;
    constexpr int kWidth = 30;
    const int filled = pct * kWidth / 100;
    err_ << "\r" << label_ << " [" << std::string(filled, '#') << std::string(kWidth - filled, '.')
         << "] " << done << "/" << total << " pods" << std::flush;
    if (done == total) err_ << "\n";
  }
  void Done() {
    if (enabled_ && last_ >= 0 && last_ < 100) err_ << "\n";
  }

 private:
  std::ostream& err_;
  bool enabled_;
  std::string label_;
  int last_ = -1;
};

int RunSim(SimFlags f, Io io) {
  if (!f.scenario_word.empty()) f.scenario_file = f.scenario_word;
  auto sc = LoadScenario(f);
  if (!sc.ok()) {
    io.err << "vgpu sim: " << sc.status().message() << "\n";
    return kExitUsage;
  }
  if (!f.node_policy.empty() || !f.gpu_policy.empty()) {
    sim::PolicyPair p;
    if (!f.node_policy.empty()) p.node_policy = f.node_policy;
    if (!f.gpu_policy.empty()) p.gpu_policy = f.gpu_policy;
    sc->policies = {p};
  }
  if (!f.topology.empty()) {
    for (sim::NodeSpec& node : sc->nodes) node.topology = f.topology;
  }
  if (Status s = sim::ValidateScenario(*sc); !s.ok()) {
    io.err << "vgpu sim: " << s.message() << "\n";
    return kExitUsage;
  }
  sim::RunOptions ro;
  sim::RealExtenderOptions eo;
  eo.handshake = !f.no_handshake;
  ro.extender = sim::RealExtenderFactory(eo);
  ro.kubelet_workers = f.kubelet_workers;
  const size_t n = sc->nodes.size();
  if (f.plugins == "grpc" || (f.plugins == "auto" && n <= 200)) {
    ro.plugins = sim::PluginMode::kGrpc;
  } else if (f.plugins == "inprocess" || (f.plugins == "auto" && n <= 1000)) {
    ro.plugins = sim::PluginMode::kInProcess;
  } else if (f.plugins == "allocator" || f.plugins == "auto") {
    ro.plugins = sim::PluginMode::kAllocatorOnly;
  } else {
    io.err << "vgpu sim: --plugins must be grpc, inprocess, allocator or auto, got '" << f.plugins
           << "'\n";
    return kExitUsage;
  }
  if (f.async_bind != "auto" && f.async_bind != "on" && f.async_bind != "off") {
    io.err << "vgpu sim: --async-bind must be on, off or auto, got '" << f.async_bind << "'\n";
    return kExitUsage;
  }
  ro.async_bind = f.async_bind == "on" || (f.async_bind == "auto" && n > 200);
  const bool tty = !f.no_progress && !f.json && ::isatty(STDERR_FILENO) == 1;

  std::vector<sim::RunResult> runs;
  for (const sim::PolicyPair& policy : sc->policies) {
    ProgressBar bar(io.err, tty, policy.Label());
    ro.progress = [&bar](size_t done, size_t total) { bar.Update(done, total); };
    auto run = sim::RunScenario(*sc, policy, ro);
    bar.Done();
    if (!run.ok()) {
      io.err << "vgpu sim: " << run.status().ToString() << "\n";
      return kExitError;
    }
    runs.push_back(std::move(*run));
  }

  bool ok = true;
  for (const sim::RunResult& r : runs) ok = ok && r.invariants.ok();
  if (f.json) {
    nlohmann::json out = {{"scenario", sc->name}, {"runs", nlohmann::json::array()}};
    for (const sim::RunResult& r : runs) out["runs"].push_back(sim::RunToJson(r));
    io.out << out.dump(2) << "\n";
    return ok ? kExitOk : kExitError;
  }
  sim::ReportOptions report;
  report.max_rows = f.max_rows;
  io.out << sc->name << ": " << sc->nodes.size() << " nodes, " << sc->pods.size() << " pods"
         << (sc->description.empty() ? "" : "\n  " + sc->description) << "\n\n";
  if (runs.size() == 1 || f.verbose) {
    for (const sim::RunResult& r : runs) io.out << sim::RenderRunText(r, report) << "\n";
  }
  if (runs.size() > 1) io.out << sim::RenderComparisonText(runs, report);
  return ok ? kExitOk : kExitError;
}

// A policy word, checked against the scheduler's own list (sim::IsKnown*Policy).
CLI::Validator Policy(bool (*known)(std::string_view), const std::string& kind,
                      const std::string& words) {
  return CLI::Validator(
      [known, kind, words](std::string& text) -> std::string {
        return known(text) ? "" : "'" + text + "' is not a " + kind + " policy (" + words + ")";
      },
      words);
}

Action RegisterSim(CLI::App& parent, Io io) {
  using Limits = sim::ScenarioLimits;
  CLI::App* cmd = parent.add_subcommand(
      "sim",
      "Run a simulated cluster (API server, device plugins with fake GPUs, kubelets, the real "
      "extender); without options, a built-in binpack vs spread demo");
  auto f = std::make_shared<SimFlags>();
  CLI::Option* scenario =
      cmd->add_option("--scenario", f->scenario_file, "scenario YAML file (see docs/sim.md)")
          ->check(NotEmpty());
  CLI::Option* nodes =
      cmd->add_option("--nodes", f->nodes, "generate a scenario with this many nodes")
          ->check(WholeNumber(1, Limits::kMaxNodes));
  CLI::Option* gpus =
      cmd->add_option("--gpus-per-node", f->gpus_per_node, "GPUs per generated node")
          ->check(WholeNumber(1, Limits::kMaxGpusPerNode))
          ->capture_default_str();
  CLI::Option* pods =
      cmd->add_option("--pods", f->pods, "generate this many pods of mixed requests")
          ->check(WholeNumber(1, Limits::kMaxPods));
  CLI::Option* seed = cmd->add_option("--seed", f->seed, "seed of the generated scenario")
                          ->check(WholeNumber(0, INT64_MAX))
                          ->capture_default_str();
  // A generated scenario needs both counts; a file or the demo takes none of the generator's.
  nodes->needs(pods);
  pods->needs(nodes);
  gpus->needs(nodes);
  seed->needs(nodes);
  // What people type first: the file as a word, as most tools take their input.
  CLI::Option* word =
      cmd->add_option("scenario", f->scenario_word, "scenario YAML file: the same as --scenario")
          ->check(NotEmpty());
  word->excludes(scenario);
  for (CLI::Option* generator : {nodes, pods, gpus, seed}) {
    scenario->excludes(generator);
    word->excludes(generator);
  }
  cmd->add_option("--node-policy", f->node_policy, "run only this node policy: binpack|spread")
      ->check(Policy(sim::IsKnownNodePolicy, "node", "binpack or spread"));
  cmd->add_option("--gpu-policy", f->gpu_policy,
                  "run only this GPU policy: binpack|spread|topology-aware, or a comma-separated "
                  "combination with numa and mutex such as binpack,mutex")
      ->check(Policy(sim::IsKnownGpuPolicy, "GPU",
                     "binpack, spread, numa, topology-aware, mutex or a comma-separated list"));
  cmd->add_option("--topology", f->topology,
                  "GPU topology of every node, whose pair scores the device plugins publish: "
                  "nvlink-pairs, pcie, or pairs such as 0-1=node+nv4,*=system (docs/sim.md)")
      ->check(NotEmpty());
  cmd->add_option(
         "--plugins", f->plugins,
         "kubelet to device plugin: grpc (real unix sockets), inprocess (direct calls "
         "into the plugin), allocator (only the plugin's Allocate logic, no servers), auto "
         "(grpc up to 200 nodes, inprocess up to 1000, allocator above)")
      ->check(OneOf({"grpc", "inprocess", "allocator", "auto"}))
      ->capture_default_str();
  cmd->add_option("--kubelet-workers", f->kubelet_workers, "threads running kubelet Allocate calls")
      ->check(WholeNumber(1, kMaxKubeletWorkers))
      ->capture_default_str();
  cmd->add_option("--max-rows", f->max_rows, "rows per table (0 = all)")
      ->check(WholeNumber(0, kMaxRows))
      ->capture_default_str();
  cmd->add_option("--async-bind", f->async_bind,
                  "bind while the next pod is filtered, as kube-scheduler does: on, off, auto (on "
                  "above 200 nodes); off makes runs reproducible")
      ->check(OneOf({"on", "off", "auto"}))
      ->capture_default_str();
  cmd->add_flag("--json", f->json, "machine-readable output");
  cmd->add_flag("--no-progress", f->no_progress, "no progress bar even on a terminal");
  cmd->add_flag("--verbose", f->verbose, "full report of every run, also when comparing");
  cmd->add_flag("--no-handshake", f->no_handshake, "extender ignores the node handshake");
  return [cmd, f, io]() {
    if (!cmd->parsed()) return kNotSelected;
    return RunSim(*f, io);
  };
}

const bool kRegistered = RegisterCommand(20, RegisterSim);

}  // namespace

}  // namespace vgpu::cli
