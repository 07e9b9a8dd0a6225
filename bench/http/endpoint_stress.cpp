// The vgpu-scheduler binary's extender listener under bad clients and load: how long GET /healthz
// takes (a new connection per probe, as the kubelet probes) with no load, with 1,000 silent
// connections, with 1,000 slow-loris connections, during a flood of oversized bodies, under
// filter load, and with all of them at once; and what an oversized body gets. The scheduler runs
// against the in-process API server (sim/apiserver) holding `--nodes` GPU nodes.
//
//   http_endpoint_stress --scheduler build/release/scheduler/vgpu-scheduler
//
// Prints a Markdown table (docs/reliability.md). Wall-clock figures: they move with the machine's
// load. bench/http/endpoint_stress.sh builds and runs it.

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "health_probe.h"
#include "load_clients.h"
#include "sim/apiserver/api_server.h"
#include "test_objects.h"

namespace {

namespace fs = std::filesystem;
using namespace vgpu;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

struct Flags {
  std::string scheduler;
  int connections = 1000;
  int window_s = 10;  // longer than the request timeout: held connections are closed and reopened
  int nodes = 50;
  int flood_clients = 4;
  int flood_mib = 80;  // over the new 16 MiB limit and cpp-httplib's 64 MiB
  int filter_clients = 4;
  std::string only;  // run the scenarios whose name contains this
};

bool ParseFlags(int argc, char** argv, Flags& f) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const std::string v = argv[i + 1];
    if (k == "--scheduler") {
      f.scheduler = v;
    } else if (k == "--connections") {
      f.connections = std::stoi(v);
    } else if (k == "--window-s") {
      f.window_s = std::stoi(v);
    } else if (k == "--nodes") {
      f.nodes = std::stoi(v);
    } else if (k == "--flood-clients") {
      f.flood_clients = std::stoi(v);
    } else if (k == "--flood-mib") {
      f.flood_mib = std::stoi(v);
    } else if (k == "--filter-clients") {
      f.filter_clients = std::stoi(v);
    } else if (k == "--only") {
      f.only = v;
    } else {
      return false;
    }
  }
  return !f.scheduler.empty() && argc % 2 == 1;
}

// The scheduler binary as a child process, its output in `log`.
class Child {
 public:
  Child(const std::vector<std::string>& argv, const fs::path& log) {
    pid_ = ::fork();
    if (pid_ == 0) {
      FILE* out = std::freopen(log.c_str(), "w", stderr);
      if (out == nullptr || ::dup2(::fileno(stderr), STDOUT_FILENO) < 0) ::_exit(126);
      std::vector<char*> args;
      args.reserve(argv.size() + 1);
      for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
  }
  ~Child() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    for (int i = 0; i < 100; ++i) {
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) return;
      std::this_thread::sleep_for(milliseconds(100));
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// "Threads: 12, VmHWM: 20480 kB" of /proc/<pid>/status, shortened.
std::string ProcessFigures(pid_t pid) {
  const std::string status = ReadFile("/proc/" + std::to_string(pid) + "/status");
  std::smatch threads, hwm, rss;
  std::regex_search(status, threads, std::regex(R"(Threads:\s+(\d+))"));
  std::regex_search(status, hwm, std::regex(R"(VmHWM:\s+(\d+))"));
  std::regex_search(status, rss, std::regex(R"(VmRSS:\s+(\d+))"));
  if (threads.empty() || hwm.empty() || rss.empty()) return "?";
  return threads[1].str() + " threads, RSS " + std::to_string(std::stol(rss[1]) / 1024) +
         " MiB (peak " + std::to_string(std::stol(hwm[1]) / 1024) + " MiB)";
}

// One request whose head announces a body over every limit and that sends none of it: which
// status comes back (0: none within 30 s) and after how long.
std::pair<int, double> AnnouncedOversizedBody(int port, size_t bytes) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  timeval tv{30, 0};
  (void)::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const std::string head =
      "POST /filter HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
      "Content-Length: " +
      std::to_string(bytes) + "\r\n\r\n";
  const Clock::time_point start = Clock::now();
  int status = 0;
  char buf[64] = {};
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0 &&
      ::send(fd, head.data(), head.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(head.size()) &&
      ::recv(fd, buf, sizeof buf - 1, 0) >= 12) {
    status = std::atoi(buf + 9);
  }
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  ::close(fd);
  return {status, ms};
}

std::string Fixed(double v) {
  char buf[32];
  (void)std::snprintf(buf, sizeof buf, v < 10 ? "%.2f" : "%.1f", v);
  return buf;
}

struct Row {
  std::string scenario;
  bench::ProbeStats probes;
  std::string notes;
};

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  if (!ParseFlags(argc, argv, flags)) {
    (void)std::fprintf(
        stderr,
        "usage: %s --scheduler PATH [--connections 1000] [--window-s 10] [--nodes 50] "
        "[--flood-clients 4] [--flood-mib 80] [--filter-clients 4] [--only SCENARIO]\n",
        argv[0]);
    return 2;
  }
  const fs::path dir = fs::temp_directory_path() / ("vgpu-http-stress-" + std::to_string(getpid()));
  fs::create_directories(dir);
  auto api = sim::ApiServer::Start();
  if (!api.ok()) {
    (void)std::fprintf(stderr, "API server: %s\n", api.status().ToString().c_str());
    return 1;
  }
  std::vector<std::string> names;
  for (int i = 0; i < flags.nodes; ++i) {
    names.push_back("node-" + std::to_string(i));
    (void)(*api)->Seed("nodes", scheduler::testing::GpuNode(names.back(), 4));
  }
  std::ofstream(dir / "kubeconfig")
      << "current-context: c\ncontexts: [{name: c, context: {cluster: "
         "k}}]\nclusters: [{name: k, cluster: {server: '"
      << (*api)->url() << "'}}]\n";
  const fs::path log = dir / "scheduler.log";
  auto child = std::make_unique<Child>(
      std::vector<std::string>{flags.scheduler, "--kubeconfig", (dir / "kubeconfig").string(),
                               "--http-bind", "127.0.0.1:0", "--metrics-bind", "",
                               "--no-quota-watch", "--no-handshake"},
      log);
  int port = 0;
  for (int i = 0; i < 300 && port == 0; ++i) {
    std::smatch m;
    const std::string text = ReadFile(log);
    if (std::regex_search(text, m, std::regex(R"(extender_port=(\d+))"))) port = std::stoi(m[1]);
    std::this_thread::sleep_for(milliseconds(100));
  }
  if (port == 0) {
    (void)std::fprintf(stderr, "the scheduler did not start:\n%s\n", ReadFile(log).c_str());
    return 1;
  }
  {
    httplib::Client c("127.0.0.1", port);
    bool ready = false;
    for (int i = 0; i < 300 && !ready; ++i) {
      auto r = c.Get("/readyz");
      ready = r && r->status == 200;
      if (!ready) std::this_thread::sleep_for(milliseconds(100));
    }
    if (!ready) {
      (void)std::fprintf(stderr, "the scheduler did not become ready:\n%s\n",
                         ReadFile(log).c_str());
      return 1;
    }
  }
  const pid_t pid = child->pid();
  (void)std::printf("scheduler %s, extender on 127.0.0.1:%d, %d GPU nodes; %s\n",
                    flags.scheduler.c_str(), port, flags.nodes, ProcessFigures(pid).c_str());

  const auto [announced_status, announced_ms] = AnnouncedOversizedBody(port, size_t{1} << 30);
  (void)std::printf(
      "oversized body announced (Content-Length 1 GiB, body not sent): %d after %s ms\n",
      announced_status, Fixed(announced_ms).c_str());
  (void)std::fflush(stdout);

  const nlohmann::json pod = scheduler::testing::GpuPod("bench", {{"nvidia.com/gpu", "1"}});
  const std::string filter_body = scheduler::testing::FilterArgs(pod, names).dump();
  const milliseconds window(flags.window_s * 1000);
  const milliseconds gap(10);
  const milliseconds timeout(5000);
  const size_t flood_bytes = static_cast<size_t>(flags.flood_mib) << 20;
  const std::string n = std::to_string(flags.connections);
  std::vector<Row> rows;
  using Kind = bench::HeldConnections::Kind;

  // Each scenario starts its load, waits a second for it to build up, probes for the window while
  // the load goes on, describes what the load saw and the scheduler's threads and memory, and
  // stops the load; a second passes before the next.
  const auto scenario = [&](const std::string& name, const std::function<Row()>& body) {
    if (name.find(flags.only) == std::string::npos) return;
    Row row = body();
    row.scenario = name;
    (void)std::printf("%s: %zu answered, %d failed, p50 %s ms, p99 %s ms, max %s ms; %s\n",
                      name.c_str(), row.probes.ms.size(), row.probes.failed,
                      Fixed(row.probes.Percentile(0.5)).c_str(),
                      Fixed(row.probes.Percentile(0.99)).c_str(),
                      Fixed(row.probes.Percentile(1.0)).c_str(), row.notes.c_str());
    (void)std::fflush(stdout);
    rows.push_back(std::move(row));
    std::this_thread::sleep_for(milliseconds(1000));
  };
  const auto probe = [&] {
    std::this_thread::sleep_for(milliseconds(1000));
    Row r;
    r.probes = bench::ProbeHealth(port, window, gap, timeout);
    r.notes = ProcessFigures(pid);
    return r;
  };
  // The loads' own figures, read once the probes are done (the lambdas run at that point).
  const auto held = [](const bench::HeldConnections& h) {
    return std::to_string(h.reopened()) + " closed by the server and reopened" +
           (h.failed_opens() > 0 ? ", " + std::to_string(h.failed_opens()) + " failed to open"
                                 : "");
  };
  const auto flooded = [](const bench::OversizedFlood& f) {
    return std::to_string(f.attempts()) +
           " oversized bodies sent: " + std::to_string(f.answered_413()) + " answered 413, " +
           std::to_string(f.answered_other()) + " other answers, " + std::to_string(f.no_answer()) +
           " no answer";
  };
  const auto filtered = [](const bench::FilterLoad& f) {
    bench::ProbeStats s;
    s.ms = f.latencies_ms();
    return std::to_string(f.ok()) + " filters (p50 " + Fixed(s.Percentile(0.5)) + " ms, p99 " +
           Fixed(s.Percentile(0.99)) + " ms), " + std::to_string(f.errors()) + " errors";
  };
  // Probes, then the load's notes: the notes must be read after the probes, with the load alive.
  const auto probe_then = [&](const std::function<std::vector<std::string>()>& notes) {
    Row r = probe();
    std::string extra;
    for (const std::string& note : notes()) extra += note + "; ";
    r.notes = extra + r.notes;
    return r;
  };

  scenario("no load", [&] { return probe(); });
  scenario(n + " idle connections", [&] {
    bench::HeldConnections idle(port, flags.connections, Kind::kIdle);
    return probe_then([&] { return std::vector<std::string>{held(idle)}; });
  });
  scenario(n + " slow-loris connections", [&] {
    bench::HeldConnections slow(port, flags.connections, Kind::kSlowLoris);
    return probe_then([&] { return std::vector<std::string>{held(slow)}; });
  });
  scenario("oversized-body flood", [&] {
    bench::OversizedFlood flood(port, flags.flood_clients, flood_bytes);
    return probe_then([&] { return std::vector<std::string>{flooded(flood)}; });
  });
  scenario("filter load", [&] {
    bench::FilterLoad load(port, flags.filter_clients, filter_body);
    return probe_then([&] { return std::vector<std::string>{filtered(load)}; });
  });
  scenario("all at once", [&] {
    bench::HeldConnections idle(port, flags.connections, Kind::kIdle);
    bench::HeldConnections slow(port, flags.connections, Kind::kSlowLoris);
    bench::OversizedFlood flood(port, flags.flood_clients, flood_bytes);
    bench::FilterLoad load(port, flags.filter_clients, filter_body);
    return probe_then([&] {
      return std::vector<std::string>{"idle: " + held(idle), "slow-loris: " + held(slow),
                                      flooded(flood), filtered(load)};
    });
  });

  (void)std::printf(
      "\n| scenario | probes answered | failed (5 s) | p50 ms | p99 ms | max ms | notes |\n"
      "|---|---|---|---|---|---|---|\n");
  for (const Row& r : rows) {
    (void)std::printf("| %s | %zu | %d | %s | %s | %s | %s |\n", r.scenario.c_str(),
                      r.probes.ms.size(), r.probes.failed, Fixed(r.probes.Percentile(0.5)).c_str(),
                      Fixed(r.probes.Percentile(0.99)).c_str(),
                      Fixed(r.probes.Percentile(1.0)).c_str(), r.notes.c_str());
  }
  child.reset();
  api->reset();
  fs::remove_all(dir);
  return 0;
}
