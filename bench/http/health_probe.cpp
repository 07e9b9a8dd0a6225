#include "health_probe.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <thread>

namespace vgpu::bench {
namespace {

using Clock = std::chrono::steady_clock;

// True when the answer is a 200, read whole (head and Content-Length bytes) before the timeout.
bool ProbeOnce(int port, std::chrono::milliseconds timeout) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  (void)::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  (void)::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);  // connect() too
  const int yes = 1;
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const Clock::time_point give_up = Clock::now() + timeout;
  bool ok = false;
  static const std::string kRequest =
      "GET /healthz HTTP/1.1\r\nHost: probe\r\nUser-Agent: kube-probe\r\nConnection: close\r\n\r\n";
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0 &&
      ::send(fd, kRequest.data(), kRequest.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(kRequest.size())) {
    std::string in;
    char buf[1024];
    size_t head_end = std::string::npos;
    size_t want = 0;
    while (Clock::now() < give_up) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      in.append(buf, static_cast<size_t>(n));
      if (head_end == std::string::npos && (head_end = in.find("\r\n\r\n")) != std::string::npos) {
        const size_t at = in.find("Content-Length: ");
        want = head_end + 4 + (at < head_end ? std::strtoul(in.c_str() + at + 16, nullptr, 10) : 0);
      }
      if (head_end != std::string::npos && in.size() >= want) {
        ok = in.compare(0, 12, "HTTP/1.1 200") == 0;
        break;
      }
    }
  }
  ::close(fd);
  return ok;
}

}  // namespace

double ProbeStats::Percentile(double p) const {
  if (ms.empty()) return 0;
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  const auto rank = static_cast<size_t>(std::ceil(p * static_cast<double>(sorted.size())));
  return sorted[std::min(sorted.size() - 1, rank == 0 ? 0 : rank - 1)];
}

ProbeStats ProbeHealth(int port, std::chrono::milliseconds window, std::chrono::milliseconds gap,
                       std::chrono::milliseconds timeout) {
  ProbeStats stats;
  const Clock::time_point end = Clock::now() + window;
  while (Clock::now() < end) {
    const Clock::time_point start = Clock::now();
    if (ProbeOnce(port, timeout)) {
      stats.ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    } else {
      ++stats.failed;
    }
    std::this_thread::sleep_for(gap);
  }
  return stats;
}

}  // namespace vgpu::bench
