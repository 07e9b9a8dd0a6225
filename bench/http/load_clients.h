#pragma once

// What bench/http/endpoint_stress.cpp puts on a listener while it probes /healthz: connections
// that hold it without finishing a request, a flood of oversized bodies, and ordinary extender
// load. Each runs on its own threads from construction to destruction.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace vgpu::bench {

// `count` connections kept open: silent (kIdle), or a request head sent one byte a second for
// ever (kSlowLoris: each byte would restart a per-read timeout). One the server closes (or
// answers) is replaced, so that `count` stay open; reopened() counts them.
class HeldConnections {
 public:
  enum class Kind { kIdle, kSlowLoris };
  HeldConnections(int port, int count, Kind kind);
  ~HeldConnections();
  HeldConnections(const HeldConnections&) = delete;
  HeldConnections& operator=(const HeldConnections&) = delete;

  int reopened() const { return reopened_.load(); }
  int failed_opens() const { return failed_opens_.load(); }

 private:
  int Open();
  void Run();

  const int port_;
  const Kind kind_;
  std::vector<int> fds_;
  std::atomic<bool> stop_{false};
  std::atomic<int> reopened_{0};
  std::atomic<int> failed_opens_{0};
  std::thread thread_;
};

// `clients` threads, each sending POST /filter with a body of `body_bytes` (over the limit) whole,
// as a client that does not look at the answer before it has sent everything, then reading the
// answer. Counts what came back.
class OversizedFlood {
 public:
  OversizedFlood(int port, int clients, size_t body_bytes);
  ~OversizedFlood();
  OversizedFlood(const OversizedFlood&) = delete;
  OversizedFlood& operator=(const OversizedFlood&) = delete;

  int attempts() const { return attempts_.load(); }
  int answered_413() const { return answered_413_.load(); }
  int answered_other() const { return answered_other_.load(); }
  int no_answer() const { return no_answer_.load(); }

 private:
  void Run();

  const int port_;
  const size_t body_bytes_;
  std::atomic<bool> stop_{false};
  std::atomic<int> attempts_{0}, answered_413_{0}, answered_other_{0}, no_answer_{0};
  std::vector<std::thread> threads_;
};

// `clients` threads posting `body` to /filter over kept-alive connections, as kube-scheduler does.
class FilterLoad {
 public:
  FilterLoad(int port, int clients, std::string body);
  ~FilterLoad();
  FilterLoad(const FilterLoad&) = delete;
  FilterLoad& operator=(const FilterLoad&) = delete;

  int ok() const { return ok_.load(); }
  int errors() const { return errors_.load(); }
  std::vector<double> latencies_ms() const;

 private:
  void Run();

  const int port_;
  const std::string body_;
  std::atomic<bool> stop_{false};
  std::atomic<int> ok_{0}, errors_{0};
  mutable std::mutex mu_;
  std::vector<double> ms_;
  std::vector<std::thread> threads_;
};

}  // namespace vgpu::bench
